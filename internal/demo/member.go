package demo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
)

// member is one sidecar of the demo and its FE.
type member struct {
	name string
	fe   *fetest.Server
	cfg  config.Config

	mu     sync.Mutex
	sc     *sidecar.Sidecar
	cancel context.CancelFunc
	done   chan struct{}
	state  string // running, killed
}

// masterOf is the member that is master now, nil while there is none.
func masterOf(ms []*member) *member {
	for _, m := range ms {
		m.mu.Lock()
		sc := m.sc
		m.mu.Unlock()
		if sc != nil && sc.Agent.Status().Role == "master" {
			return m
		}
	}
	return nil
}

// start builds the member's sidecar as `run` builds one and runs its agent
// until kill or stop.
func (m *member) start(ctx context.Context, log *zap.Logger, version string) error {
	sc, err := sidecar.New(ctx, m.cfg, config.Secrets{}, log, version)
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc.Agent.Run(rctx, 2*time.Second)
	}()
	m.mu.Lock()
	m.sc, m.cancel, m.done, m.state = sc, cancel, done, "running"
	m.mu.Unlock()
	return nil
}

// kill simulates a crash: the etcd connection dies before anything else, so the
// member cannot resign and its lease has to expire.
func (m *member) kill() { m.halt("killed", true) }

// stop is a graceful stop (SIGTERM).
func (m *member) stop() { m.halt("stopped", false) }

func (m *member) halt(state string, crash bool) {
	m.mu.Lock()
	sc, cancel, done := m.sc, m.cancel, m.done
	m.sc, m.state = nil, state
	m.mu.Unlock()
	if sc == nil {
		return
	}
	if crash {
		_ = sc.Etcd.Close()
	}
	cancel()
	<-done
	sc.Close()
}
