package election

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
	"github.com/hmssync/hmssync/internal/retry"
)

// followLeader keeps e.leader equal to the value of the candidate key with the
// lowest create revision. It re-reads after every change under the prefix rather
// than interpreting events (elections change rarely, and a read cannot get out of
// step), and reports "" while etcd cannot be read.
func (e *Elector) followLeader(ctx context.Context) {
	cli := e.cfg.Client
	prefix := e.cfg.Prefix + "/"
	delay := retry.NewDelay(100*time.Millisecond, 2*e.cfg.RequestTimeout)
	for ctx.Err() == nil {
		rev, err := e.readLeader(ctx, prefix)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e.setLeader("")
			e.log.Debug("cannot read the election leader", zap.Error(err))
			delay.Wait(ctx)
			continue
		}
		delay.Reset()
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for wr := range wch {
			if wr.Err() != nil {
				e.log.Debug("election watch ended; re-reading", zap.Error(wr.Err()))
				break
			}
			if len(wr.Events) == 0 {
				continue
			}
			if _, err := e.readLeader(ctx, prefix); err != nil {
				break
			}
			delay.Reset()
		}
		cancel()
		// A watch that keeps failing at once must not spin.
		delay.Wait(ctx)
	}
}

// readLeader reads the current leader's name and returns the read's revision.
func (e *Elector) readLeader(ctx context.Context, prefix string) (int64, error) {
	rctx, cancel := etcdcall.Request(ctx, e.cfg.RequestTimeout)
	defer cancel()
	resp, err := e.cfg.Client.Get(rctx, prefix, clientv3.WithFirstCreate()...)
	if err != nil {
		return 0, err
	}
	name := ""
	if len(resp.Kvs) > 0 {
		name = string(resp.Kvs[0].Value)
	}
	e.setLeader(name)
	return resp.Header.Revision, nil
}
