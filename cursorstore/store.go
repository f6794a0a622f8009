// Package cursorstore owns every etcd key hmssync reads or writes (SPEC §4): the
// master cursor of each catalog with its fenced compare-and-set, watches of it,
// each member's durable cursors and lease-bound status, and the pause key. Values
// are plain decimals and JSON so that operators can read them with etcdctl.
package cursorstore

import (
	"context"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

// DefaultRequestTimeout bounds each etcd request when New is given 0.
const DefaultRequestTimeout = 3 * time.Second

// Store reads and writes one cluster's keys. It is safe for concurrent use.
type Store struct {
	cli     *clientv3.Client
	keys    keys
	timeout time.Duration
	log     *zap.Logger
	err     error // invalid prefix or cluster: every method returns it
	// freshBound is how long a watch may go without an answer from etcd and
	// still count as fresh: three request timeouts, as a watch asks for progress
	// every request timeout and a loaded etcd may take one to answer.
	freshBound time.Duration

	watchRestarts atomic.Int64
	// beforeWatch, when set (tests only), runs between a watch's read of the key
	// and the start of its watch: the one moment at which a compaction makes the
	// watch fail with ErrCompacted deterministically.
	beforeWatch func(key string, readRev int64)
}

// New returns the store of cluster under prefix ("" means /hmssync). It does not
// talk to etcd. requestTimeout bounds each request and sets the watches'
// freshness bound (three request timeouts, see Watch.Fresh). An invalid prefix or cluster name is reported by every method
// (and by Err), so that callers validating early can use ValidateName or
// ClusterPrefix first.
func New(cli *clientv3.Client, prefix, cluster string, requestTimeout time.Duration, log *zap.Logger) *Store {
	k, err := newKeys(prefix, cluster)
	if requestTimeout <= 0 {
		requestTimeout = DefaultRequestTimeout
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Store{cli: cli, keys: k, timeout: requestTimeout, log: log, err: err, freshBound: 3 * requestTimeout}
}

// Err reports an invalid prefix or cluster given to New.
func (s *Store) Err() error { return s.err }

// Root is the cluster's subtree, `<prefix>/<cluster>`.
func (s *Store) Root() string { return s.keys.root }

// ElectionPrefix is election.Config.Prefix for this cluster.
func (s *Store) ElectionPrefix() string { return s.keys.election() }

// MasterCursorKey, MemberCursorKey and StatusKey name keys for messages and docs.
func (s *Store) MasterCursorKey(catalog string) string { return s.keys.masterCursor(catalog) }

// MemberCursorKey is the key of a member's own cursor for a catalog.
func (s *Store) MemberCursorKey(member, catalog string) string {
	return s.keys.memberCursor(member, catalog)
}

// MasterTxnsKey is the key of the master's open-transaction state for a
// catalog, MemberTxnsKey a member's.
func (s *Store) MasterTxnsKey(catalog string) string { return s.keys.masterTxns(catalog) }

// MemberTxnsKey is the key of a member's open-transaction state for a catalog.
func (s *Store) MemberTxnsKey(member, catalog string) string {
	return s.keys.memberTxns(member, catalog)
}

// StatusKey is the key of a member's status.
func (s *Store) StatusKey(member string) string { return s.keys.status(member) }

// HolderKey is the key that names the process running as member (HoldMember).
func (s *Store) HolderKey(member string) string { return s.keys.holder(member) }

// PauseKey is the maintenance-mode key.
func (s *Store) PauseKey() string { return s.keys.pause() }

// request derives one request's context: the caller's, bounded by the request
// timeout and marked WithRequireLeader (etcdcall.Request), so that an etcd
// member without a leader refuses it at once and the client's next endpoint
// serves it. Writes go through etcdcall.Write, which retries such a refusal.
func (s *Store) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return etcdcall.Request(ctx, s.timeout)
}

// check validates the store and the names that go into a key.
func (s *Store) check(names ...[2]string) error {
	if s.err != nil {
		return s.err
	}
	for _, n := range names {
		if err := ValidateName(n[0], n[1]); err != nil {
			return err
		}
	}
	return nil
}

func catalogName(c string) [2]string { return [2]string{"catalog", c} }
func memberName(m string) [2]string  { return [2]string{"member", m} }
