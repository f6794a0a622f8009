package election

import (
	"context"
	"fmt"
)

// Resign hands the mastership over: it ends the term and revokes the lease, which
// deletes the leader key so the next candidate wins in milliseconds instead of
// after the lease TTL. It returns once the lease is revoked, or with an error when
// ctx ends first or etcd is unreachable (then the lease expires by itself within
// its TTL); the term has ended either way. Resign on a member that is not master
// does nothing.
//
// The member campaigns again afterwards (behind the candidates already waiting),
// unless its gate is closed. To leave the election for good, cancel Run's
// context instead: Run resigns on its way out.
func (e *Elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	ts := e.term
	e.mu.Unlock()
	if ts == nil {
		return nil
	}
	ts.requestStop("resigned")
	select {
	case <-ts.released:
		return ts.releaseErr
	case <-ctx.Done():
		return fmt.Errorf("resign as master %q: %w (the term has ended; the lease expires within %s)",
			e.cfg.Name, ctx.Err(), e.cfg.LeaseTTL)
	}
}

// StepDown ends the current term at once without waiting, e.g. after a fenced
// write said "not leader". The lease is revoked in the background and the member
// campaigns again. It does nothing when the member is not master.
func (e *Elector) StepDown(reason string) {
	e.mu.Lock()
	ts := e.term
	e.mu.Unlock()
	if ts != nil {
		ts.requestStop("stepped down: " + reason)
	}
}
