package election

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// waitGate returns true once the candidacy gate is open, false if ctx ended first.
func (e *Elector) waitGate(ctx context.Context) bool {
	if e.cfg.CanLead == nil || e.cfg.CanLead() {
		return true
	}
	e.log.Info("not campaigning: candidacy gate is false")
	t := time.NewTicker(e.cfg.GateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			if e.cfg.CanLead() {
				e.log.Info("candidacy gate is true again; campaigning")
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
