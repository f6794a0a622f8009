package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
)

// FEHealth checks the member's FE periodically. Its verdict gates the member's
// candidacy (a member whose FE is unhealthy does not campaign, and a master whose FE
// stays unhealthy resigns) and feeds /readyz.
type FEHealth struct {
	ap       applier.Applier
	interval time.Duration
	timeout  time.Duration
	log      *zap.Logger

	mu      sync.Mutex
	checked bool
	err     error
	at      time.Time
}

// NewFEHealth checks ap every interval, each check bounded by timeout.
func NewFEHealth(ap applier.Applier, interval, timeout time.Duration, log *zap.Logger) *FEHealth {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	if timeout <= 0 || timeout > interval {
		timeout = interval
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &FEHealth{ap: ap, interval: interval, timeout: timeout, log: log}
}

// Healthy reports whether the last check succeeded. Before the first check it is
// false: a member does not campaign for an FE it has never reached.
func (h *FEHealth) Healthy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.checked && h.err == nil
}

// FECheck is the outcome of the last FE check.
type FECheck struct {
	Err     error // nil when healthy
	Checked bool  // false before the first check
	At      time.Time
}

// State returns the last check's outcome.
func (h *FEHealth) State() FECheck {
	h.mu.Lock()
	defer h.mu.Unlock()
	return FECheck{Err: h.err, Checked: h.checked, At: h.at}
}

// AuthFailing reports whether the FE refused our credentials at the last check.
func (h *FEHealth) AuthFailing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err != nil && isAuth(h.err)
}

// Run checks at once, then every interval, until ctx ends.
func (h *FEHealth) Run(ctx context.Context) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *FEHealth) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	err := h.ap.Check(cctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	h.mu.Lock()
	was, wasChecked := h.err, h.checked
	h.err, h.checked, h.at = err, true, time.Now()
	h.mu.Unlock()
	switch {
	case err != nil && isAuth(err):
		h.log.Error("FE refused hmssync's credentials: check fe.user and the FE password (fe.password_file or HMSSYNC_FE_PASSWORD)", zap.Error(err))
	case err != nil && applier.ClassOf(err) == applier.Configuration:
		h.log.Error("FE check: the FE answered, but not as the configured FE should (check fe.url and fe.dialect)", zap.Error(err))
	case err != nil && (was == nil || !wasChecked):
		h.log.Warn("FE check failed: this member will not campaign for master", zap.Error(err))
	case err == nil && (was != nil || !wasChecked):
		h.log.Info("FE reachable and authenticated")
	}
}

// isAuth reports whether err is an FE authentication failure.
func isAuth(err error) bool {
	var ae *applier.Error
	return errors.As(err, &ae) && ae.Class == applier.Auth
}
