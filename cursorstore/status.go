package cursorstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Roles a member reports in its status.
const (
	RoleMaster   = "master"
	RoleFollower = "follower"
)

// MemberStatus is what a member publishes at members/<member>/status, as JSON,
// bound to its lease (it disappears within the lease TTL after the member dies).
type MemberStatus struct {
	Member   string                     `json:"member"`
	Role     string                     `json:"role"`
	FEURL    string                     `json:"fe_url"`
	Version  string                     `json:"version"`
	Catalogs map[string]CatalogProgress `json:"catalogs"`
	// Time is when the status was written; the publisher sets it.
	Time time.Time `json:"time"`
}

// CatalogProgress is one catalog's progress as the member publishes it in its
// MemberStatus (agent.CatalogStatus is the fuller view of /status).
type CatalogProgress struct {
	Cursor int64 `json:"cursor"`
	// Lag is how many events the member is behind: behind the master cursor for
	// a follower, behind the HMS current event id for the master.
	Lag           int64     `json:"lag"`
	LastError     string    `json:"last_error,omitempty"`
	LastErrorTime time.Time `json:"last_error_time,omitzero"`
	// SelfHeals counts the catalog's self-heals since the member started;
	// LastHeal is the last one in a line (scope, object, event), at
	// LastHealTime.
	SelfHeals    int       `json:"self_heals,omitempty"`
	LastHeal     string    `json:"last_heal,omitempty"`
	LastHealTime time.Time `json:"last_heal_time,omitzero"`
	// MetastoreCurrent is the metastore's current event id as the master last
	// read it, at MetastoreReadAt; only the master publishes it (nil on
	// followers, and before the first read).
	MetastoreCurrent *int64    `json:"hms_current_event_id,omitempty"`
	MetastoreReadAt  time.Time `json:"hms_current_read_at,omitzero"`
	// MetastoreError is the last failed read of the metastore (any member's:
	// the current id, a fetch) while its reads keep failing, since
	// MetastoreFailingSince; empty once a read succeeds.
	MetastoreError        string    `json:"metastore_error,omitempty"`
	MetastoreFailingSince time.Time `json:"metastore_failing_since,omitzero"`
}

// MetastoreView is one catalog's metastore as the master last read it.
type MetastoreView struct {
	// CurrentEventID is the metastore's current event id, read at ReadAt by
	// member ReadBy (the master).
	CurrentEventID int64     `json:"current_event_id"`
	ReadAt         time.Time `json:"read_at"`
	ReadBy         string    `json:"read_by"`
	// Lag is CurrentEventID minus the committed master cursor: how far the
	// cluster is behind the metastore (nil while the master cursor is unknown).
	// A paused master keeps reading the current id, so it grows while paused.
	Lag *int64 `json:"lag"`
}

// ClusterStatus is everything `hmssync status` shows, read from one revision of
// the cluster's subtree.
type ClusterStatus struct {
	Root     string `json:"root"`
	Revision int64  `json:"revision"`
	// Master is the election's leader (lowest create revision), "" if none.
	Master string `json:"master"`
	// Candidates lists the members in the election, in order of succession.
	Candidates  []string `json:"candidates"`
	Paused      bool     `json:"paused"`
	PauseReason string   `json:"pause_reason,omitempty"`
	// PausedSince is when the pause key was set, from pause_since (SetPaused,
	// else the master as it began to hold: StampPause); zero when unknown.
	PausedSince   time.Time        `json:"paused_since,omitzero"`
	MasterCursors map[string]int64 `json:"master_cursors"`
	// Epochs is each catalog's committed epoch (SPEC §2a); a catalog with a
	// cursor but no epoch key is at epoch 0.
	Epochs map[string]int64 `json:"epochs"`
	// Metastore is each catalog's metastore as the master last read it: its
	// current event id and the cluster's lag behind it. A catalog is absent
	// while no live member that says it is master has published a read.
	Metastore map[string]MetastoreView `json:"metastore"`
	Members   []MemberView             `json:"members"`
	// Problems are values that could not be read (each names its key and value).
	Problems []string `json:"problems,omitempty"`
}

// MemberView is one member in the cluster status.
type MemberView struct {
	Member string `json:"member"`
	// Live: the member's status key exists (its lease is alive).
	Live bool `json:"live"`
	// Role is the election's for a live member (master: the election's
	// leader, Master), "down" when not live.
	Role    string    `json:"role"`
	FEURL   string    `json:"fe_url,omitempty"`
	Version string    `json:"version,omitempty"`
	Time    time.Time `json:"time,omitzero"`
	// LeaseTTL is the seconds left on the status lease, -1 when not live.
	LeaseTTL int64                    `json:"lease_ttl_seconds"`
	Catalogs map[string]MemberCatalog `json:"catalogs"`
}

// MemberCatalog is one member's progress in one catalog.
type MemberCatalog struct {
	// Cursor is the member's cursor: from its live status, else its stored cursor.
	Cursor *int64 `json:"cursor"`
	// StoredCursor is the durable cursor key (what a restart resumes from).
	StoredCursor *int64 `json:"stored_cursor"`
	// StoredEpoch is the epoch the durable cursor belongs to (0 when the
	// member wrote none); a member whose epoch differs from the committed one
	// full-refreshes before it applies again.
	StoredEpoch *int64 `json:"stored_epoch"`
	// Lag is the master cursor minus Cursor, nil when either is unknown; for
	// the live master, the lag behind the metastore its own status reports.
	Lag *int64 `json:"lag"`
	// MetastoreLag is the catalog's metastore current event id (Metastore)
	// minus Cursor: how far this member is behind the metastore, nil when
	// either is unknown.
	MetastoreLag *int64 `json:"metastore_lag"`
	// MetastoreError and MetastoreFailingSince: the member's reads of the
	// metastore fail (CatalogProgress).
	MetastoreError        string    `json:"metastore_error,omitempty"`
	MetastoreFailingSince time.Time `json:"metastore_failing_since,omitzero"`
	LastError             string    `json:"last_error,omitempty"`
	// LastErrorTime is when LastError happened. The member stops publishing
	// an error once the catalog has applied a batch after it.
	LastErrorTime time.Time `json:"last_error_time,omitzero"`
	// SelfHeals, LastHeal and LastHealTime are the member's self-heals of the
	// catalog (CatalogProgress).
	SelfHeals    int       `json:"self_heals,omitempty"`
	LastHeal     string    `json:"last_heal,omitempty"`
	LastHealTime time.Time `json:"last_heal_time,omitzero"`
	// statusLag is the lag the member's status reports (CatalogProgress.Lag).
	statusLag *int64
}

// metastoreRead is a catalog's current id as one member's status reports it.
type metastoreRead struct {
	member string
	role   string
	id     int64
	at     time.Time
}

// Statuses reads the cluster's subtree in one request and assembles the status:
// the master, every member seen (in the election, with a status, or with stored
// cursors), their cursors and lag behind the master cursor, and their lease time
// left. Unreadable values become Problems rather than failing the whole read.
func (s *Store) Statuses(ctx context.Context) (ClusterStatus, error) {
	if err := s.check(); err != nil {
		return ClusterStatus{}, err
	}
	root := s.keys.root
	rctx, cancel := s.request(ctx)
	resp, err := s.cli.Get(rctx, root+"/", clientv3.WithPrefix())
	cancel()
	if err != nil {
		return ClusterStatus{}, fmt.Errorf("read %s/ from etcd: %w", root, err)
	}
	b := &statusBuild{s: s, members: map[string]*MemberView{}, leases: map[string]clientv3.LeaseID{}, reads: map[string][]metastoreRead{},
		cs: ClusterStatus{Root: root, Revision: resp.Header.Revision, MasterCursors: map[string]int64{}, Epochs: map[string]int64{},
			Metastore: map[string]MetastoreView{}}}
	for _, kv := range resp.Kvs {
		b.add(kv)
	}
	b.elect()
	b.leaseTimes(ctx)
	return b.finish(), nil
}

// statusBuild assembles a ClusterStatus from the keys of one read.
type statusBuild struct {
	s       *Store
	cs      ClusterStatus
	members map[string]*MemberView
	cands   []candidate
	leases  map[string]clientv3.LeaseID // of the members with a status key
	// reads are the metastore current ids the live statuses report, by catalog.
	reads map[string][]metastoreRead
	// pauseRev is the pause key's create revision, stamp the pause_since
	// record (PausedSince when they match).
	pauseRev int64
	stamp    PauseStamp
}

// candidate is a member in the election, by its key's create revision.
type candidate struct {
	name string
	rev  int64
}

// view is the member's entry, made on first sight.
func (b *statusBuild) view(name string) *MemberView {
	if m, ok := b.members[name]; ok {
		return m
	}
	m := &MemberView{Member: name, Role: "down", LeaseTTL: -1, Catalogs: map[string]MemberCatalog{}}
	b.members[name] = m
	return m
}

// add takes one key of the cluster's subtree into the status; a value that
// cannot be read becomes a Problem.
func (b *statusBuild) add(kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	kind, member, catalog := b.s.keys.parseKey(key)
	switch kind {
	case kindPause:
		b.cs.Paused, b.cs.PauseReason, b.pauseRev = true, string(kv.Value), kv.CreateRevision
	case kindPauseSince:
		b.stamp, _ = parsePauseStamp(kv.Value)
	case kindCandidate:
		b.cands = append(b.cands, candidate{string(kv.Value), kv.CreateRevision})
	case kindMasterCursor:
		c, err := parseCursor(key, kv, b.s.masterFix(catalog))
		if err != nil {
			b.cs.Problems = append(b.cs.Problems, err.Error())
			return
		}
		b.cs.MasterCursors[catalog] = c.Value
		if _, ok := b.cs.Epochs[catalog]; !ok {
			b.cs.Epochs[catalog] = 0
		}
	case kindMasterEpoch:
		e, err := parseEpoch(key, kv, b.s.epochFix(catalog))
		if err != nil {
			b.cs.Problems = append(b.cs.Problems, err.Error())
			return
		}
		b.cs.Epochs[catalog] = e.value
	case kindMemberEpoch, kindMemberCursor:
		// A member's durable cursor and the epoch it belongs to.
		m := b.view(member)
		var v int64
		var err error
		if kind == kindMemberEpoch {
			var e epoch
			e, err = parseEpoch(key, kv, b.s.memberFix(member))
			v = e.value
		} else {
			var c Cursor
			c, err = parseCursor(key, kv, b.s.memberFix(member))
			v = c.Value
		}
		if err != nil {
			b.cs.Problems = append(b.cs.Problems, err.Error())
			return
		}
		mc := m.Catalogs[catalog]
		if kind == kindMemberEpoch {
			mc.StoredEpoch = &v
		} else {
			mc.StoredCursor = &v
		}
		m.Catalogs[catalog] = mc
	case kindStatus:
		var st MemberStatus
		m := b.view(member)
		if err := json.Unmarshal(kv.Value, &st); err != nil {
			b.cs.Problems = append(b.cs.Problems, (&BadValueError{Key: key, Value: string(kv.Value),
				Reason: "not a member status JSON: " + err.Error(), Fix: "the member replaces it when it next publishes; else etcdctl del it"}).Error())
			return
		}
		m.Live, m.Role, m.FEURL, m.Version, m.Time = true, st.Role, st.FEURL, st.Version, st.Time
		for name, c := range st.Catalogs {
			mc := m.Catalogs[name]
			v := c.Cursor
			lag := c.Lag
			mc.Cursor, mc.LastError, mc.LastErrorTime, mc.statusLag = &v, c.LastError, c.LastErrorTime, &lag
			mc.SelfHeals, mc.LastHeal, mc.LastHealTime = c.SelfHeals, c.LastHeal, c.LastHealTime
			mc.MetastoreError, mc.MetastoreFailingSince = c.MetastoreError, c.MetastoreFailingSince
			m.Catalogs[name] = mc
			if c.MetastoreCurrent != nil && *c.MetastoreCurrent >= 0 {
				b.reads[name] = append(b.reads[name], metastoreRead{member: member, role: st.Role, id: *c.MetastoreCurrent, at: c.MetastoreReadAt})
			}
		}
		b.leases[member] = clientv3.LeaseID(kv.Lease)
	}
}

// elect orders the candidates: the first is the master.
func (b *statusBuild) elect() {
	cs := &b.cs
	sort.Slice(b.cands, func(i, j int) bool { return b.cands[i].rev < b.cands[j].rev })
	for _, c := range b.cands {
		cs.Candidates = append(cs.Candidates, c.name)
		if m := b.view(c.name); !m.Live {
			m.Role = "candidate, no status"
		}
	}
	if len(b.cands) > 0 {
		cs.Master = b.cands[0].name
	}
	// A live member's role is the election's, read with the master above:
	// its status may say what it was before the last change of master.
	for _, m := range b.members {
		switch {
		case !m.Live:
		case m.Member == cs.Master:
			m.Role = RoleMaster
		case m.Role == RoleMaster:
			m.Role = RoleFollower
		}
	}
}

// leaseTimes asks etcd how long each live member's status lease has left.
func (b *statusBuild) leaseTimes(ctx context.Context) {
	cs, s := &b.cs, b.s
	for name, id := range b.leases {
		if id == clientv3.NoLease {
			continue
		}
		rctx, cancel := s.request(ctx)
		ttl, err := s.cli.TimeToLive(rctx, id)
		cancel()
		if err != nil {
			cs.Problems = append(cs.Problems, fmt.Sprintf("lease %x of member %s: %v", id, name, err))
			continue
		}
		b.members[name].LeaseTTL = ttl.TTL
	}
}

// metastore picks each catalog's metastore read: the elected master's, else
// (right after a failover, before the new master's first status) the freshest
// of those whose status says master; and the pause's time.
func (b *statusBuild) metastore() {
	cs := &b.cs
	for catalog, reads := range b.reads {
		var best metastoreRead
		found := false
		for _, r := range reads {
			if r.member == cs.Master {
				best, found = r, true
				break
			}
			if r.role == RoleMaster && (!found || r.at.After(best.at)) {
				best, found = r, true
			}
		}
		if !found {
			continue
		}
		v := MetastoreView{CurrentEventID: best.id, ReadAt: best.at, ReadBy: best.member}
		if master, ok := cs.MasterCursors[catalog]; ok && master >= 0 {
			lag := max(best.id-master, 0)
			v.Lag = &lag
		}
		cs.Metastore[catalog] = v
	}
	if cs.Paused && b.stamp.Rev == b.pauseRev {
		cs.PausedSince = b.stamp.Since
	}
}

// finish fills each member's cursor (its live one, else its stored one) and its
// lag behind the master cursor and the metastore, and lists the members by name.
func (b *statusBuild) finish() ClusterStatus {
	b.metastore()
	cs := b.cs
	for _, m := range b.members {
		for catalog, mc := range m.Catalogs {
			if mc.Cursor == nil {
				mc.Cursor = mc.StoredCursor
			}
			if m.Live && m.Member == cs.Master && mc.statusLag != nil {
				// The master's own figure, behind the metastore: the master
				// cursor key is newer than the cursor in its last status,
				// so their difference would be a lag behind itself.
				mc.Lag = mc.statusLag
			} else if master, ok := cs.MasterCursors[catalog]; ok && mc.Cursor != nil && master >= 0 && *mc.Cursor >= 0 {
				lag := master - *mc.Cursor
				mc.Lag = &lag
			}
			if ms, ok := cs.Metastore[catalog]; ok && mc.Cursor != nil && *mc.Cursor >= 0 {
				lag := max(ms.CurrentEventID-*mc.Cursor, 0)
				mc.MetastoreLag = &lag
			}
			m.Catalogs[catalog] = mc
		}
		cs.Members = append(cs.Members, *m)
	}
	sort.Slice(cs.Members, func(i, j int) bool { return cs.Members[i].Member < cs.Members[j].Member })
	return cs
}
