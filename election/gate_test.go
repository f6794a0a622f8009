package election_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// candidates returns the names of the members with a candidate key.
func candidates(t *testing.T, cli *clientv3.Client) map[string]bool {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("read candidates: %v", err)
	}
	out := map[string]bool{}
	for _, kv := range resp.Kvs {
		out[string(kv.Value)] = true
	}
	return out
}

func TestGateKeepsAMemberOutAndMakesAMasterResign(t *testing.T) {
	srv := etcdtest.New(t)
	var aGate, bGate atomic.Bool
	gated := func(g *atomic.Bool) func(*election.Config) {
		return func(c *election.Config) {
			c.CanLead = g.Load
			c.GateInterval = 20 * time.Millisecond
			c.GateGrace = 300 * time.Millisecond
		}
	}
	a := start(t, srv.NewClient(t), "a", gated(&aGate))

	// Gate false: a stays out of the election. (An observation window: a "never"
	// cannot be awaited.)
	for range 10 {
		if candidates(t, srv.Client)["a"] || a.el.IsMaster() {
			t.Fatal("a campaigns while its gate is false")
		}
		time.Sleep(30 * time.Millisecond)
	}

	aGate.Store(true)
	eventually(t, 10*time.Second, "a master once its gate opens", a.el.IsMaster)
	aTerm, _ := a.el.Current()

	bGate.Store(true)
	b := start(t, srv.NewClient(t), "b", gated(&bGate))
	eventually(t, 10*time.Second, "b campaigning", func() bool { return candidates(t, srv.Client)["b"] })

	// A waiting candidate withdraws when its gate closes...
	bGate.Store(false)
	eventually(t, 10*time.Second, "b withdraws", func() bool { return !candidates(t, srv.Client)["b"] })
	bGate.Store(true)
	eventually(t, 10*time.Second, "b back in line", func() bool { return candidates(t, srv.Client)["b"] })

	// ...and a master whose gate stays false resigns after the grace.
	aGate.Store(false)
	select {
	case <-aTerm.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("a still master 10s after its gate closed (grace 300ms)")
	}
	eventually(t, 10*time.Second, "b takes over", b.el.IsMaster)
	if candidates(t, srv.Client)["a"] {
		t.Fatal("a campaigns again although its gate is still false")
	}
}

func TestGateFlickerShorterThanGraceKeepsTheMaster(t *testing.T) {
	srv := etcdtest.New(t)
	var gate atomic.Bool
	gate.Store(true)
	var polls atomic.Int64
	a := start(t, srv.NewClient(t), "a", func(c *election.Config) {
		c.CanLead = func() bool { polls.Add(1); return gate.Load() }
		c.GateInterval = 10 * time.Millisecond
		c.GateGrace = time.Hour
	})
	eventually(t, 10*time.Second, "a master", a.el.IsMaster)
	term, _ := a.el.Current()
	gate.Store(false)
	n := polls.Load()
	eventually(t, 10*time.Second, "the master polled the closed gate", func() bool { return polls.Load() > n+5 })
	gate.Store(true)
	select {
	case <-term.Done:
		t.Fatal("master resigned although the gate was false for far less than the grace")
	default:
	}
}

// At start the gate is closed until the FE's first health check passes: the
// elector says it waits, at info, in words that do not read as a failure; a
// gate that closes after campaigning is said to have closed.
func TestGateAtStartIsLoggedAsAWaitNotAProblem(t *testing.T) {
	srv := etcdtest.New(t)
	core, logs := observer.New(zapcore.DebugLevel)
	var gate atomic.Bool
	m := start(t, srv.NewClient(t), "a", func(c *election.Config) {
		c.CanLead = gate.Load
		c.GateInterval = 10 * time.Millisecond
		c.GateGrace = 50 * time.Millisecond
		c.Logger = zap.New(core)
	})
	eventually(t, 5*time.Second, "the wait logged", func() bool { return logs.FilterMessageSnippet("candidacy gate").Len() > 0 })
	gate.Store(true)
	eventually(t, 10*time.Second, "master once the gate opens", m.el.IsMaster)
	gate.Store(false)
	eventually(t, 10*time.Second, "the closed gate logged", func() bool { return logs.FilterMessageSnippet("closed").Len() > 0 })
	first := logs.FilterMessageSnippet("candidacy gate").All()[0]
	if first.Level != zapcore.InfoLevel || !strings.Contains(first.Message, "waiting") || strings.Contains(first.Message, "false") {
		t.Fatalf("first gate line %s %q; want info, saying it waits (not that the gate is false)", first.Level, first.Message)
	}
}
