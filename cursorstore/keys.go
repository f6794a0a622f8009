package cursorstore

import (
	"fmt"
	"strings"

	"github.com/hmssync/hmssync/internal/names"
)

// DefaultPrefix is etcd.prefix's default.
const DefaultPrefix = "/hmssync"

// keys is the etcd layout of one cluster (SPEC §4), under root = <prefix>/<cluster>:
//
//	root/election/<lease hex>          candidates (concurrency.Election layout), value = member name
//	root/catalogs/<catalog>/cursor     master cursor, decimal
//	root/catalogs/<catalog>/epoch      the master cursor's lineage (SPEC §2a), decimal
//	root/catalogs/<catalog>/metastore  the metastore's db uuid the lineage belongs to
//	root/catalogs/<catalog>/txns       the master's open transactions as of the master cursor (JSON)
//	root/members/<member>/cursors/<c>  a member's own cursor, decimal, durable
//	root/members/<member>/epochs/<c>   the epoch that cursor belongs to, decimal
//	root/members/<member>/txns/<c>     the member's open transactions as of that cursor (JSON)
//	root/members/<member>/status       a member's status JSON, bound to its lease
//	root/members/<member>/holder       the process running as that member (JSON), bound to its own lease
//	root/pause                         present = maintenance mode
type keys struct {
	root string
}

func newKeys(prefix, cluster string) (keys, error) {
	root, err := ClusterPrefix(prefix, cluster)
	return keys{root: root}, err
}

// ClusterPrefix returns `<prefix>/<cluster>`, the subtree of one cluster, after
// checking both by the rules of internal/names (the same as the configuration's).
func ClusterPrefix(prefix, cluster string) (string, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasPrefix(prefix, "/") {
		return "", fmt.Errorf("etcd prefix %q: must start with /", prefix)
	}
	prefix = strings.TrimRight(prefix, "/")
	if err := names.Prefix(prefix); err != nil {
		return "", fmt.Errorf("etcd prefix %w", err)
	}
	if err := ValidateName("cluster", cluster); err != nil {
		return "", err
	}
	return prefix + "/" + cluster, nil
}

// ValidateName checks a cluster, member or catalog name that becomes one segment
// of an etcd key, by the rules of internal/names: the configuration checks
// names with the same rules, so a name it accepts is one the store accepts.
func ValidateName(kind, name string) error {
	check := names.Catalog
	switch kind {
	case "cluster":
		check = names.Cluster
	case "member":
		check = names.Member
	}
	if err := check(name); err != nil {
		return fmt.Errorf("%s name %w (it is part of etcd keys)", kind, err)
	}
	return nil
}

func (k keys) election() string       { return k.root + "/election" }
func (k keys) pause() string          { return k.root + "/pause" }
func (k keys) status(m string) string { return k.root + "/members/" + m + "/status" }
func (k keys) holder(m string) string { return k.root + "/members/" + m + "/holder" }

// masterDir is the prefix of a catalog's committed keys (cursor, epoch,
// metastore): one range read or watch covers them all. Names never contain '/',
// so the prefix matches no other catalog.
func (k keys) masterDir(catalog string) string { return k.root + "/catalogs/" + catalog + "/" }

func (k keys) masterCursor(catalog string) string    { return k.masterDir(catalog) + "cursor" }
func (k keys) masterEpoch(catalog string) string     { return k.masterDir(catalog) + "epoch" }
func (k keys) masterMetastore(catalog string) string { return k.masterDir(catalog) + "metastore" }
func (k keys) masterTxns(catalog string) string      { return k.masterDir(catalog) + "txns" }

func (k keys) memberTxns(member, catalog string) string {
	return k.root + "/members/" + member + "/txns/" + catalog
}

func (k keys) memberEpoch(member, catalog string) string {
	return k.root + "/members/" + member + "/epochs/" + catalog
}

func (k keys) memberCursors(member string) string {
	return k.root + "/members/" + member + "/cursors/"
}

func (k keys) memberCursor(member, catalog string) string {
	return k.memberCursors(member) + catalog
}

// keyKind is what parseKey found.
type keyKind int

const (
	kindOther keyKind = iota
	kindCandidate
	kindMasterCursor
	kindMasterEpoch
	kindMasterMetastore
	kindMemberCursor
	kindMemberEpoch
	kindStatus
	kindPause
)

// parseKey classifies a key of the cluster's subtree and extracts its names.
func (k keys) parseKey(key string) (kind keyKind, member, catalog string) {
	rest, ok := strings.CutPrefix(key, k.root+"/")
	if !ok {
		return kindOther, "", ""
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 1 && parts[0] == "pause":
		return kindPause, "", ""
	case len(parts) == 2 && parts[0] == "election":
		return kindCandidate, "", ""
	case len(parts) == 3 && parts[0] == "catalogs" && parts[2] == "cursor":
		return kindMasterCursor, "", parts[1]
	case len(parts) == 3 && parts[0] == "catalogs" && parts[2] == "epoch":
		return kindMasterEpoch, "", parts[1]
	case len(parts) == 3 && parts[0] == "catalogs" && parts[2] == "metastore":
		return kindMasterMetastore, "", parts[1]
	case len(parts) == 4 && parts[0] == "members" && parts[2] == "epochs":
		return kindMemberEpoch, parts[1], parts[3]
	case len(parts) == 3 && parts[0] == "members" && parts[2] == "status":
		return kindStatus, parts[1], ""
	case len(parts) == 4 && parts[0] == "members" && parts[2] == "cursors":
		return kindMemberCursor, parts[1], parts[3]
	}
	return kindOther, "", ""
}
