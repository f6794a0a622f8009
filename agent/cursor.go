package agent

// memberCursor is this member's own cursor: the id of the last event applied to
// its FE (-1: unknown, the next step full-refreshes), the lineage (epoch) it
// belongs to (SPEC §2a), whether etcd holds it yet, what the FE was last sent and
// why a full refresh is due. The steps change it only through these methods, so
// that every move also reaches the metrics and /status (moved) and is saved to
// etcd after the step (unsaved).
type memberCursor struct {
	value, epoch int64
	loaded       bool // read from etcd (resume or startUnknown)
	dirty        bool // moved since etcd last saved it
	// sent is the to_event_id of the last batch this member applied to its
	// FE (its durable cursor after a restart; -1 none): an FE reporting less
	// lost what it was sent (checkFEApplied).
	sent int64
	// refreshWhy says why value is -1, for the full-refresh metric and log.
	refreshWhy string
	// resetRev is the revision of the last operator reset (master cursor -1)
	// this member acted on: each reset refreshes once.
	resetRev int64
	// moved is told every new value and epoch (metrics, /status, lag).
	moved func(value, epoch int64)
}

func newMemberCursor(moved func(value, epoch int64)) memberCursor {
	return memberCursor{value: -1, sent: -1, refreshWhy: "initial", moved: moved}
}

// Value is the cursor (-1 unknown); Epoch the lineage it belongs to.
func (c *memberCursor) Value() int64 { return c.value }
func (c *memberCursor) Epoch() int64 { return c.epoch }

// unknown says whether the next step must full-refresh.
func (c *memberCursor) unknown() bool { return c.value == -1 }

// resume takes the durable cursor read from etcd at start (value, epoch), which
// is also what the FE was last sent.
func (c *memberCursor) resume(value, epoch int64) {
	c.loaded = true
	c.value, c.epoch, c.sent = value, epoch, value
	c.publish()
	c.dirty = false
}

// startUnknown records that etcd holds no durable cursor for this member: the
// first step full-refreshes.
func (c *memberCursor) startUnknown() {
	c.loaded = true
	c.value, c.refreshWhy = -1, "initial"
	c.publish()
	c.dirty = false
}

// moveTo moves the cursor within its lineage.
func (c *memberCursor) moveTo(v int64) {
	c.value = v
	c.dirty = true
	c.publish()
}

// moveInto moves the cursor into lineage epoch (after a full refresh, or
// adopting the committed lineage).
func (c *memberCursor) moveInto(v, epoch int64) {
	c.epoch = epoch
	c.moveTo(v)
}

// followEpoch puts the cursor, unchanged, into lineage epoch: an operator's
// value of another epoch that this member continues after.
func (c *memberCursor) followEpoch(epoch int64) {
	if epoch != c.epoch {
		c.epoch = epoch
		c.dirty = true
	}
}

// reset makes the next step full-refresh, for reason.
func (c *memberCursor) reset(reason string) {
	c.refreshWhy = reason
	c.moveTo(-1)
}

// refreshReason says why a full refresh is due ("initial" when nothing says).
func (c *memberCursor) refreshReason() string {
	if c.refreshWhy == "" {
		return "initial"
	}
	return c.refreshWhy
}

// refreshed records that a full refresh was done: the reason is spent.
func (c *memberCursor) refreshed() { c.refreshWhy = "" }

// sentTo records that the FE acknowledged a batch up to to.
func (c *memberCursor) sentTo(to int64) { c.sent = to }

// replayFrom moves the cursor back to what the FE reports as applied (fe),
// which is also the last the FE holds: the events after it are sent again.
func (c *memberCursor) replayFrom(fe int64) {
	c.sent = fe
	c.moveTo(fe)
}

// lastSent is the to_event_id of the last batch the FE acknowledged (-1 none).
func (c *memberCursor) lastSent() int64 { return c.sent }

// operatorReset says whether the committed cursor's revision rev is an
// operator's reset this member has not acted on yet, and marks it acted on.
func (c *memberCursor) operatorReset(rev int64) bool {
	if rev == c.resetRev {
		return false
	}
	c.resetRev = rev
	return true
}

// unsaved reports the value and epoch etcd does not hold yet (ok false: it holds
// them).
func (c *memberCursor) unsaved() (value, epoch int64, ok bool) {
	return c.value, c.epoch, c.dirty
}

// saved records that etcd holds value and epoch.
func (c *memberCursor) saved() { c.dirty = false }

func (c *memberCursor) publish() {
	if c.moved != nil {
		c.moved(c.value, c.epoch)
	}
}
