package election

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

// errPhantom reports a campaign that "won" with a candidate key that no longer
// exists: the lease expired while the campaign waited (etcd issues 11051, 19597).
var errPhantom = errors.New("won the campaign with a candidate key that is gone (lease expired while waiting)")

// campaign enters the election with the session's lease and waits until every
// candidate created before it is gone. It then proves the win (session alive, a
// linearizable read shows the own key at its create revision) and returns the
// fencing token and the revision from which to watch the own key.
//
// Every request carries WithRequireLeader, so a member cut off from the etcd
// quorum gets an error instead of waiting forever, and ctx cancels the wait at
// once even while etcd is unreachable.
func (e *Elector) campaign(ctx context.Context, sess *session) (Token, int64, error) {
	cli := e.cfg.Client
	ctx = clientv3.WithRequireLeader(ctx)
	key := fmt.Sprintf("%s/%x", e.cfg.Prefix, sess.Lease())

	// Create the candidate key. The If makes a retry after an unknown outcome
	// harmless: the key of this lease exists at most once.
	rctx, cancel := etcdcall.Request(ctx, e.cfg.RequestTimeout)
	var resp *clientv3.TxnResponse
	err := etcdcall.Write(rctx, func(rctx context.Context) (err error) {
		resp, err = cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, e.cfg.Name, clientv3.WithLease(sess.Lease()))).
			Else(clientv3.OpGet(key)).
			Commit()
		return err
	})
	cancel()
	if err != nil {
		return Token{}, 0, fmt.Errorf("create candidate key %s: %w", key, err)
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return Token{}, 0, fmt.Errorf("candidate key %s vanished while being created", key)
		}
		rev = kvs[0].CreateRevision
	}

	if err := e.waitForPredecessors(ctx, sess, rev); err != nil {
		return Token{}, 0, err
	}

	// The phantom-leadership check.
	select {
	case <-sess.Done():
		return Token{}, 0, fmt.Errorf("candidate key %s: session ended while campaigning: %w", key, errPhantom)
	default:
	}
	rctx, cancel = etcdcall.Request(ctx, e.cfg.RequestTimeout)
	get, err := cli.Get(rctx, key)
	cancel()
	if err != nil {
		return Token{}, 0, fmt.Errorf("confirm candidate key %s after winning: %w", key, err)
	}
	if len(get.Kvs) == 0 || get.Kvs[0].CreateRevision != rev || clientv3.LeaseID(get.Kvs[0].Lease) != sess.Lease() {
		return Token{}, 0, fmt.Errorf("candidate key %s (create revision %d): %w", key, rev, errPhantom)
	}
	return Token{Key: key, Rev: rev, Lease: sess.Lease()}, get.Header.Revision + 1, nil
}

// waitForPredecessors waits until no candidate key created before rev remains.
// Each candidate waits only for its direct predecessor, so a resignation wakes one
// candidate, not all of them.
func (e *Elector) waitForPredecessors(ctx context.Context, sess *session, rev int64) error {
	cli := e.cfg.Client
	opts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1))
	for {
		rctx, cancel := etcdcall.Request(ctx, e.cfg.RequestTimeout)
		resp, err := cli.Get(rctx, e.cfg.Prefix+"/", opts...)
		cancel()
		if err != nil {
			return fmt.Errorf("look for earlier candidates under %s/: %w", e.cfg.Prefix, err)
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		pred := string(resp.Kvs[0].Key)
		if err := e.waitForDelete(ctx, sess, pred, resp.Header.Revision+1); err != nil {
			return err
		}
	}
}

// waitForDelete waits for key's deletion from revision from on. It also ends when
// the own session ends: the own key is gone then and waiting is pointless.
func (e *Elector) waitForDelete(ctx context.Context, sess *session, key string, from int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := e.cfg.Client.Watch(wctx, key, clientv3.WithRev(from))
	for {
		select {
		case <-sess.Done():
			return fmt.Errorf("waiting for earlier candidate %s: own session ended", key)
		case wr, ok := <-wch:
			if !ok {
				if err := ctx.Err(); err != nil {
					return err
				}
				return fmt.Errorf("waiting for earlier candidate %s: watch closed", key)
			}
			if err := wr.Err(); err != nil {
				return fmt.Errorf("waiting for earlier candidate %s: %w", key, err)
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					return nil
				}
			}
		}
	}
}
