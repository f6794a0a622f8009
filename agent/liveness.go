package agent

import "time"

// Liveness (/livez) measures progress per external call, not per step: a step
// may honestly make many calls (a Doris master's drain: up to ten fetches and
// one REFRESH per table, each bounded by its own deadline), and only a single
// call that outlives every deadline means the loop is stuck.

// progressed records that one external call of the current step completed
// (successfully or not): the stuck clock of /livez starts again from now. It
// does nothing while the loop waits between steps, and never revives a step that
// has just ended.
func (l *catalogLoop) progressed() {
	if s := l.stepStart.Load(); s != 0 {
		l.stepStart.CompareAndSwap(s, max(s, time.Now().UnixNano()))
	}
}
