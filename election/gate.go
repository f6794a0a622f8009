package election

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// waitGate returns true once the candidacy gate is open, false if ctx ended
// first. first says whether the member has not campaigned yet: at start the
// gate is closed until the FE passes its first health check, which is the
// normal course of a start, not a problem, and is logged as such.
func (e *Elector) waitGate(ctx context.Context, first bool) bool {
	if e.cfg.CanLead == nil || e.cfg.CanLead() {
		return true
	}
	if first {
		e.log.Info("waiting for the candidacy gate (the FE health check) to open before campaigning")
	} else {
		e.log.Info("not campaigning: the candidacy gate (the FE health check) closed; campaigning again once it opens")
	}
	t := time.NewTicker(e.cfg.GateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			if e.cfg.CanLead() {
				e.log.Info("candidacy gate open; campaigning")
				return true
			}
		}
	}
}

// watchGate calls withdraw and returns as soon as the gate closes; it returns
// without calling it when ctx ends. It guards a campaign in progress: a member
// that may not lead must not stay in line.
func (e *Elector) watchGate(ctx context.Context, withdraw func()) {
	if e.cfg.CanLead == nil {
		return
	}
	t := time.NewTicker(e.cfg.GateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !e.cfg.CanLead() {
				e.log.Info("candidacy gate closed; withdrawing from the election", zap.String("prefix", e.cfg.Prefix))
				withdraw()
				return
			}
		}
	}
}
