package election_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// termRecorder remembers every term a member reported.
type termRecorder struct {
	mu    sync.Mutex
	terms []election.Term
	stop  chan struct{}
	done  chan struct{}
}

func recordTerms(el *election.Elector) *termRecorder {
	r := &termRecorder{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			ch := el.Changed()
			if term, ok := el.Current(); ok {
				r.mu.Lock()
				if n := len(r.terms); n == 0 || r.terms[n-1].Token != term.Token {
					r.terms = append(r.terms, term)
				}
				r.mu.Unlock()
			}
			select {
			case <-ch:
			case <-r.stop:
				return
			}
		}
	}()
	return r
}

func (r *termRecorder) close() []election.Term {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]election.Term(nil), r.terms...)
}

// A candidate whose lease is revoked while it waits must not report master when
// its turn comes: its key is gone (etcd issues 11051, 19597).
func TestPhantomLeadershipIsImpossible(t *testing.T) {
	srv := etcdtest.New(t)
	a := start(t, srv.NewClient(t), "a", nil)
	eventually(t, 10*time.Second, "a master", a.el.IsMaster)
	b := start(t, srv.NewClient(t), "b", nil)
	rec := recordTerms(b.el)

	var bLease clientv3.LeaseID
	eventually(t, 10*time.Second, "b's candidate key exists", func() bool {
		resp, err := srv.Client.Get(context.Background(), prefix+"/", clientv3.WithPrefix())
		if err != nil {
			return false
		}
		for _, kv := range resp.Kvs {
			if string(kv.Value) == "b" {
				bLease = clientv3.LeaseID(kv.Lease)
				return true
			}
		}
		return false
	})

	// Revoke b's lease behind its back, then let a leave at once (Run resigns
	// on its way out), before b's keepalive (every TTL/3) can notice: b's wait
	// ends with its own key gone.
	if _, err := srv.Client.Revoke(context.Background(), bLease); err != nil {
		t.Fatalf("revoke b's lease: %v", err)
	}
	a.stop()

	// b campaigns again with a new lease and wins that way.
	eventually(t, 10*time.Second, "b master with a new lease", func() bool {
		term, ok := b.el.Current()
		return ok && term.Token.Lease != bLease
	})
	for _, term := range rec.close() {
		if term.Token.Lease == bLease {
			t.Fatalf("b reported master with its revoked lease %x (token %+v)", bLease, term.Token)
		}
	}
}
