package election_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zaptest"

	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

const prefix = "/hmssync/test/election"

// member is one running Elector in a test.
type member struct {
	name   string
	el     *election.Elector
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
}

// start runs an Elector until the test ends (or stop is called).
func start(t *testing.T, cli *clientv3.Client, name string, tune func(*election.Config)) *member {
	t.Helper()
	cfg := election.Config{
		Client:         cli,
		Prefix:         prefix,
		Name:           name,
		LeaseTTL:       10 * time.Second,
		RequestTimeout: 2 * time.Second,
		Logger:         zaptest.NewLogger(t).Named(name),
	}
	if tune != nil {
		tune(&cfg)
	}
	el, err := election.New(cfg)
	if err != nil {
		t.Fatalf("election.New(%s): %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{name: name, el: el, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		if err := el.Run(ctx); err != nil {
			t.Errorf("Run(%s): %v", name, err)
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop ends Run and waits for it.
func (m *member) stop() {
	m.cancel()
	<-m.done
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// masters returns the members that report master.
func masters(ms ...*member) []*member {
	var out []*member
	for _, m := range ms {
		if m.el.IsMaster() {
			out = append(out, m)
		}
	}
	return out
}

// etcdLeader reads the election the way etcdctl elect -l does: the value of the
// key with the lowest create revision.
func etcdLeader(t *testing.T, cli *clientv3.Client) (name string, kv bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		t.Fatalf("read election: %v", err)
	}
	if len(resp.Kvs) == 0 {
		return "", false
	}
	return string(resp.Kvs[0].Value), true
}

func TestNewValidates(t *testing.T) {
	srv := etcdtest.New(t)
	cases := map[string]election.Config{
		"no client":          {Prefix: prefix, Name: "a"},
		"no prefix":          {Client: srv.Client, Name: "a"},
		"no name":            {Client: srv.Client, Prefix: prefix},
		"fractional TTL":     {Client: srv.Client, Prefix: prefix, Name: "a", LeaseTTL: 2500 * time.Millisecond},
		"timeout vs TTL":     {Client: srv.Client, Prefix: prefix, Name: "a", LeaseTTL: 3 * time.Second, RequestTimeout: time.Second},
		"negative gateGrace": {Client: srv.Client, Prefix: prefix, Name: "a", GateGrace: -time.Second},
	}
	for name, cfg := range cases {
		if _, err := election.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	if _, err := election.New(election.Config{Client: srv.Client, Prefix: prefix, Name: "a"}); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
}

func TestOneMasterAmongThreeOthersFollowItsName(t *testing.T) {
	srv := etcdtest.New(t)
	var ms []*member
	for _, name := range []string{"a", "b", "c"} {
		ms = append(ms, start(t, srv.NewClient(t), name, nil))
	}
	eventually(t, 10*time.Second, "one master, everyone agrees on its name", func() bool {
		m := masters(ms...)
		if len(m) != 1 {
			return false
		}
		for _, x := range ms {
			if x.el.Leader() != m[0].name {
				return false
			}
		}
		return true
	})
	master := masters(ms...)[0]
	if got, _ := etcdLeader(t, srv.Client); got != master.name {
		t.Fatalf("etcd's lowest candidate is %q, but %q reports master", got, master.name)
	}
	term, ok := master.el.Current()
	if !ok || !term.Token.Valid() {
		t.Fatalf("master %s: Current() = %+v, %v", master.name, term, ok)
	}
	// The token is the real candidate key at its create revision.
	resp, err := srv.Client.Get(context.Background(), term.Token.Key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get leader key %s: %v %v", term.Token.Key, resp, err)
	}
	if kv := resp.Kvs[0]; kv.CreateRevision != term.Token.Rev || clientv3.LeaseID(kv.Lease) != term.Token.Lease || string(kv.Value) != master.name {
		t.Fatalf("leader key %s in etcd: create rev %d lease %x value %q; token %+v", kv.Key, kv.CreateRevision, kv.Lease, kv.Value, term.Token)
	}
	// Stays that way: nobody else turns master while the first holds its lease.
	for range 20 {
		if m := masters(ms...); len(m) != 1 || m[0] != master {
			t.Fatalf("masters changed without cause: %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGracefulResignHandsOverBeforeTheLeaseWouldExpire(t *testing.T) {
	srv := etcdtest.New(t)
	const ttl = 30 * time.Second
	long := func(c *election.Config) { c.LeaseTTL = ttl }
	a := start(t, srv.NewClient(t), "a", long)
	eventually(t, 10*time.Second, "a master", a.el.IsMaster)
	b := start(t, srv.NewClient(t), "b", long)
	eventually(t, 10*time.Second, "b campaigning and following a", func() bool {
		resp, err := srv.Client.Get(context.Background(), prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 2 && b.el.Leader() == "a"
	})
	aTerm, _ := a.el.Current()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.el.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	select {
	case <-aTerm.Done:
	default:
		t.Fatal("Resign returned but the term's Done is still open")
	}
	// The old lease is revoked, not left to expire.
	ttlResp, err := srv.Client.TimeToLive(context.Background(), aTerm.Token.Lease)
	if err != nil || ttlResp.TTL != -1 {
		t.Fatalf("resigned master's lease %x: TTL %v, %v; want revoked (-1)", aTerm.Token.Lease, ttlResp, err)
	}
	// A third of the TTL is far more than a handover needs and far less than
	// waiting for the lease.
	eventually(t, ttl/3, "b takes over", b.el.IsMaster)
	bTerm, _ := b.el.Current()
	if bTerm.Token.Rev <= aTerm.Token.Rev {
		t.Fatalf("successor's epoch %d not above predecessor's %d", bTerm.Token.Rev, aTerm.Token.Rev)
	}
	eventually(t, 10*time.Second, "a follows b", func() bool { return a.el.Leader() == "b" && !a.el.IsMaster() })
}

func TestCrashedMasterIsSucceededOnlyAfterItsLeaseExpires(t *testing.T) {
	srv := etcdtest.New(t)
	short := func(c *election.Config) { c.LeaseTTL = 3 * time.Second; c.RequestTimeout = 900 * time.Millisecond }
	aCli := srv.NewClient(t)
	a := start(t, aCli, "a", short)
	eventually(t, 10*time.Second, "a master", a.el.IsMaster)
	b := start(t, srv.NewClient(t), "b", short)
	eventually(t, 10*time.Second, "b follows a", func() bool { return b.el.Leader() == "a" })
	aTerm, _ := a.el.Current()

	// A crash: a's connection dies without a revoke, its lease is orphaned.
	aCli.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		// Role first, lease second: if b already claims master while a's lease is
		// still alive, b took over too early.
		isMaster := b.el.IsMaster()
		ttl, err := srv.Client.TimeToLive(context.Background(), aTerm.Token.Lease)
		if err != nil {
			t.Fatalf("TimeToLive(%x): %v", aTerm.Token.Lease, err)
		}
		if isMaster {
			if ttl.TTL != -1 {
				t.Fatalf("b became master while a's lease %x still had %ds to live", aTerm.Token.Lease, ttl.TTL)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b not master 20s after a crashed (a's lease TTL left: %d)", ttl.TTL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
