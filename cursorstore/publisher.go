package cursorstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
	"github.com/hmssync/hmssync/internal/retry"
)

// DefaultStatusInterval is the least time between two status writes: an agent
// may call Update after every batch without loading etcd.
const DefaultStatusInterval = time.Second

// StatusPublisher keeps a member's status key current: Update hands it the
// newest status, Run writes it bound to a lease of its own (separate from the
// election's, so it outlives terms) and writes it again with a new lease when
// the old one is lost.
type StatusPublisher struct {
	s        *Store
	member   string
	ttl      time.Duration
	interval time.Duration

	mu      sync.Mutex
	status  MemberStatus
	has     bool
	kick    chan struct{} // one token while an unwritten update is pending
	onWrite func(error)   // ObserveWrites's hook
}

// ObserveWrites makes the publisher call f after each attempt to write the
// status key (nil: written), for metrics. Set it before Run.
func (p *StatusPublisher) ObserveWrites(f func(error)) {
	p.mu.Lock()
	p.onWrite = f
	p.mu.Unlock()
}

// NewStatusPublisher returns a publisher for member whose status lives for ttl
// after the member stops refreshing it (whole seconds, at least 1 s; etcd raises
// very short TTLs to its minimum). interval 0 means DefaultStatusInterval.
func (s *Store) NewStatusPublisher(member string, ttl, interval time.Duration) (*StatusPublisher, error) {
	if err := s.check(memberName(member)); err != nil {
		return nil, err
	}
	if ttl < time.Second || ttl%time.Second != 0 {
		return nil, fmt.Errorf("status lease TTL %s: want whole seconds, at least 1s", ttl)
	}
	if interval <= 0 {
		interval = DefaultStatusInterval
	}
	return &StatusPublisher{s: s, member: member, ttl: ttl, interval: interval, kick: make(chan struct{}, 1)}, nil
}

// Update sets the status to publish; it never blocks. Member is filled in and
// Time is set when written.
func (p *StatusPublisher) Update(st MemberStatus) {
	p.mu.Lock()
	p.status, p.has = st, true
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run publishes until ctx ends, then revokes the lease so that the status
// disappears at once (bounded by the request timeout). It returns nil then;
// etcd failures are logged and retried.
func (p *StatusPublisher) Run(ctx context.Context) error {
	s := p.s
	key := s.keys.status(p.member)
	log := s.log.With(zap.String("key", key))
	delay := retry.NewDelay(100*time.Millisecond, p.ttl)
	for {
		// Nothing to say yet: wait for the first Update.
		if !p.pending() {
			select {
			case <-ctx.Done():
				return nil
			case <-p.kick:
			}
		}
		rctx, cancel := s.request(ctx)
		lease, err := s.cli.Grant(rctx, int64(p.ttl/time.Second))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("cannot grant the status lease; retrying", zap.Error(err))
			delay.Wait(ctx)
			p.poke()
			continue
		}
		// etcdcall.KeepAlive rather than the client's KeepAlive: its renewals
		// are not tied to one member's stream (see etcdcall).
		kctx, kcancel := context.WithCancel(ctx)
		lost := etcdcall.KeepAlive(kctx, s.cli, lease.ID, time.Duration(lease.TTL)*time.Second, s.timeout)
		err = p.publish(ctx, key, lease.ID, lost)
		kcancel()
		<-lost
		p.revoke(lease.ID)
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("status lease lost; publishing again with a new lease", zap.Error(err))
		p.poke()
		delay.Wait(ctx)
	}
}

func (p *StatusPublisher) pending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.has
}

func (p *StatusPublisher) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// publish writes the status now and after each Update (at most once per
// interval) while the lease lives. It returns why it stopped.
func (p *StatusPublisher) publish(ctx context.Context, key string, lease clientv3.LeaseID, lost <-chan struct{}) error {
	s := p.s
	dirty := true
	var last time.Time
	var wake <-chan time.Time
	delay := retry.NewDelay(100*time.Millisecond, p.ttl/3)
	for {
		if dirty && wake == nil {
			if wait := p.interval - time.Since(last); !last.IsZero() && wait > 0 {
				wake = time.After(wait)
			} else {
				err := p.put(ctx, key, lease)
				p.observeWrite(err)
				switch {
				case err == nil:
					dirty, last = false, time.Now()
					delay.Reset()
				case errors.Is(err, rpctypes.ErrLeaseNotFound):
					return err
				default:
					s.log.Warn("cannot publish status; retrying", zap.String("key", key), zap.Error(err))
					wake = time.After(delay.Next())
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.kick:
			dirty = true
		case <-wake:
			wake = nil
		case <-lost:
			return fmt.Errorf("keepalive of lease %x ended", lease)
		}
	}
}

func (p *StatusPublisher) observeWrite(err error) {
	p.mu.Lock()
	f := p.onWrite
	p.mu.Unlock()
	if f != nil && (err == nil || !errors.Is(err, context.Canceled)) {
		f(err)
	}
}

func (p *StatusPublisher) put(ctx context.Context, key string, lease clientv3.LeaseID) error {
	p.mu.Lock()
	st := p.status
	p.mu.Unlock()
	st.Member = p.member
	st.Time = time.Now().UTC().Truncate(time.Millisecond)
	val, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode status of %s: %w", p.member, err)
	}
	rctx, cancel := p.s.request(ctx)
	defer cancel()
	err = etcdcall.Write(rctx, func(rctx context.Context) error {
		_, err := p.s.cli.Put(rctx, key, string(val), clientv3.WithLease(lease))
		return err
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

func (p *StatusPublisher) revoke(id clientv3.LeaseID) {
	ctx, cancel := p.s.request(context.Background())
	defer cancel()
	if _, err := p.s.cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		p.s.log.Debug("revoke status lease", zap.Error(err))
	}
}
