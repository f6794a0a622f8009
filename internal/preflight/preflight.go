// Package preflight checks, before a sidecar starts or when one misbehaves, that
// everything it needs answers as it must: etcd (reachable, version, credentials,
// writes and leases under the prefix), each catalog's metastore (reachable, its
// notification log kept and readable, what the recent window holds) and the FE
// (reachable, credentials, each catalog present, of the Hive kind, and for Doris
// without its own event sync, which would do the work twice).
//
// Every check ends in a Result that names what was checked, what was seen and,
// when it failed, what to change. Checks never stop at the first failure: an
// operator fixing a configuration wants the whole list. Each external call has a
// deadline from the Target. The package writes only one key, under
// <prefix>/<cluster>/preflight/, bound to a short lease and deleted at once.
package preflight

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/hms"
)

// Target is what to check: the sidecar's configuration, already validated and
// with its secrets read.
type Target struct {
	Member string
	Etcd   Etcd
	FE     FE
	// Catalogs are the catalogs the sidecar serves, in configuration order.
	Catalogs []Catalog
}

// Etcd is how the sidecar reaches etcd.
type Etcd struct {
	// Client is the client configuration (endpoints, TLS, credentials, dial timeout).
	Client clientv3.Config
	// Prefix and Cluster locate the sidecar's keys: <Prefix>/<Cluster>/….
	Prefix, Cluster string
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
	// EmbeddedDir, when set, is the data directory of an etcd the sidecar runs
	// inside itself (etcd.embedded_dir): there is no etcd to check beforehand.
	EmbeddedDir string
}

// FE is the frontend the sidecar applies to.
type FE struct {
	URL, Dialect   string
	User, Password string
	Timeout        time.Duration
	// Client, when set, sends the FE requests (with fe.tls for an https://
	// FE); nil uses a default client.
	Client *http.Client
}

// Catalog is one catalog and its metastore.
type Catalog struct {
	Name   string
	URIs   []string
	Framed bool
	TLS    *tls.Config
	// Kerberos is the catalog's hms_auth when it names Kerberos (nil: none).
	Kerberos   *hms.KerberosConfig
	UGIUser    string
	HMSCatalog string
	Timeout    time.Duration
	// Window is how many of the newest events to read to describe the log
	// (hmssync check: the catalog's batch_size, at least 100; at most MaxWindow).
	Window int
}

// MaxWindow bounds the events read to describe a metastore's recent log, so that
// a check costs one batch whatever the log holds.
const MaxWindow = 1000

// Result is the outcome of one check.
type Result struct {
	// Check names what was checked, e.g. "etcd writable under /hmssync/prod".
	Check string `json:"check"`
	OK    bool   `json:"ok"`
	// Detail is what was seen: a version, an id range, an error.
	Detail string `json:"detail,omitempty"`
	// Fix says what to change; set only when OK is false.
	Fix string `json:"fix,omitempty"`
	// Unverified marks a check that could not be made (the metastore refuses
	// to reveal a setting, or does not know it): not a failure, but not a
	// pass either; Detail says why.
	Unverified bool `json:"unverified,omitempty"`
}

// Run runs every check and returns their results in a stable order: etcd, then
// each catalog's metastore, then the FE.
func Run(ctx context.Context, t Target) []Result {
	var rs []Result
	rs = append(rs, checkEtcd(ctx, t)...)
	for _, c := range t.Catalogs {
		rs = append(rs, checkMetastore(ctx, c)...)
	}
	rs = append(rs, checkFE(ctx, t.FE, t.Catalogs)...)
	return rs
}

// Passed reports whether every result is OK.
func Passed(rs []Result) bool {
	for _, r := range rs {
		if !r.OK {
			return false
		}
	}
	return true
}

func pass(check, detail string) Result { return Result{Check: check, OK: true, Detail: detail} }

func fail(check, detail, fix string) Result {
	return Result{Check: check, OK: false, Detail: detail, Fix: fix}
}
