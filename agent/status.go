package agent

import (
	"fmt"
	"net/url"
	"time"

	"github.com/hmssync/hmssync/cursorstore"
)

// Status is the member's view of itself, served as JSON on /status. It never
// contains a secret.
type Status struct {
	Cluster string `json:"cluster"`
	Member  string `json:"member"`
	Version string `json:"version,omitempty"`
	Role    string `json:"role"`
	Leader  string `json:"leader,omitempty"`
	// Term is this member's election term while it is master: its election
	// key's create revision, which strictly increases from master to master
	// (the commit log lines carry it too).
	Term     int64           `json:"term,omitempty"`
	Paused   bool            `json:"paused"`
	Ready    bool            `json:"ready"`
	NotReady []string        `json:"not_ready,omitempty"`
	FE       FEStatus        `json:"fe"`
	Catalogs []CatalogStatus `json:"catalogs"`
	Time     time.Time       `json:"time"`
}

// FEStatus describes the member's FE.
type FEStatus struct {
	URL       string     `json:"url,omitempty"`
	Dialect   string     `json:"dialect"`
	Scope     string     `json:"scope"`
	Healthy   bool       `json:"healthy"`
	Error     string     `json:"error,omitempty"`
	CheckedAt *time.Time `json:"checked_at,omitempty"`
}

// CatalogStatus describes one catalog's synchronisation.
type CatalogStatus struct {
	Name string `json:"name"`
	// Cursor is the last event id applied to this member's FE (-1 unknown).
	Cursor int64 `json:"cursor"`
	// MasterCursor is the committed master cursor (-1 unknown).
	MasterCursor int64 `json:"master_cursor"`
	// Epoch is the lineage Cursor belongs to, MasterEpoch the committed
	// lineage (SPEC §2a; -1 unknown). They differ only until this member has
	// brought its FE into the committed lineage.
	Epoch       int64 `json:"epoch"`
	MasterEpoch int64 `json:"master_epoch"`
	// FEApplied is the event id the FE itself last reported as applied
	// (native dialect, local scope; absent when never asked).
	FEApplied *int64 `json:"fe_applied_event_id,omitempty"`
	// HMSCurrent is the metastore's current event id as last read (-1 never),
	// at HMSCurrentAt. The master reads it every cycle, and every poll
	// interval while it holds for the pause key.
	HMSCurrent   int64      `json:"hms_current_event_id"`
	HMSCurrentAt *time.Time `json:"hms_current_read_at,omitempty"`
	// MetastoreError is the last failed read of the metastore while reads keep
	// failing (since MetastoreFailingSince); absent once one succeeds.
	MetastoreError        string     `json:"metastore_error,omitempty"`
	MetastoreFailingSince *time.Time `json:"metastore_failing_since,omitempty"`
	// Warning is a finding about the catalog from outside the sync loop,
	// such as Doris's own event sync still on for it (SetCatalogWarning).
	Warning       string  `json:"warning,omitempty"`
	LagEvents     int64   `json:"lag_events"`
	LagSeconds    float64 `json:"lag_seconds"`
	FullRefreshes int     `json:"full_refreshes"`
	SelfHeals     int     `json:"self_heals"`
	// LastHeals are the catalog's last self-heals, oldest first (at most ten).
	LastHeals []HealStatus `json:"last_heals,omitempty"`
	// HealLoops are the objects healed more than self_heal.max_per_hour times
	// in the last hour: their events keep failing.
	HealLoops []string `json:"heal_loops,omitempty"`
	// Paused: this member, as master, holds the catalog for the pause key (its
	// loop saw the key and has done nothing since). Status.Paused says only
	// that the key is present: a cycle already running finishes first.
	Paused      bool `json:"paused"`
	Failing     bool `json:"failing"`
	AuthFailing bool `json:"auth_failing,omitempty"`
	// ConfigFailing: the FE answered as no configured FE should (a catalog it
	// lacks, not a Doris envelope); LastError quotes its answer.
	ConfigFailing bool       `json:"config_failing,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	LastErrorAt   *time.Time `json:"last_error_at,omitempty"`
	LastAppliedAt *time.Time `json:"last_applied_at,omitempty"`
}

// HealStatus is one self-heal: what was refreshed and why.
type HealStatus struct {
	// Object is db.table, db, or "" for the whole catalog.
	Object string `json:"object,omitempty"`
	// Scope is table, database or catalog.
	Scope     string    `json:"scope"`
	EventID   int64     `json:"event_id,omitempty"`
	EventType string    `json:"event_type,omitempty"`
	Error     string    `json:"error"`
	At        time.Time `json:"at"`
}

// summary is the heal in one line, for `hmssync status`.
func (h HealStatus) summary() string {
	what := h.Scope
	if h.Object != "" {
		what += " " + h.Object
	}
	if h.EventID != 0 {
		what += fmt.Sprintf(" at event %d", h.EventID)
		if h.EventType != "" {
			what += " (" + h.EventType + ")"
		}
	}
	return what
}

func healStatus(h healRecord) HealStatus {
	hs := HealStatus{Scope: h.scope.String(), EventID: h.eventID, EventType: h.eventType, Error: h.err, At: h.at}
	if h.scope != healCatalog {
		hs.Object = objectName(h.object).String()
	}
	return hs
}

// Status reports the member's current state.
func (a *Agent) Status() Status {
	now := time.Now()
	term, master := a.cfg.Elector.Current()
	s := Status{
		Cluster: a.cfg.Cluster, Member: a.cfg.Member, Version: a.cfg.Version,
		Role: "follower", Leader: a.cfg.Elector.Leader(), Paused: a.pause.isPaused(), Time: now,
	}
	if master {
		s.Role = "master"
		s.Term = term.Token.Rev
	}
	fc := a.health.State()
	err, checked, at := fc.Err, fc.Checked, fc.At
	s.FE = FEStatus{URL: redactURL(a.cfg.FEURL), Dialect: a.cfg.Applier.Dialect(), Scope: string(a.scope), Healthy: checked && err == nil}
	if err != nil {
		s.FE.Error = err.Error()
	}
	if checked {
		s.FE.CheckedAt = &at
	}
	for _, l := range a.loops {
		st := l.rec.snapshot()
		cs := CatalogStatus{
			Name: l.cat.Name, Cursor: st.own, MasterCursor: st.master, HMSCurrent: st.hmsCurrent,
			LagEvents: st.lagEvents, FullRefreshes: st.fullRefreshes, SelfHeals: st.selfHeal,
			Failing: st.failing, AuthFailing: st.authFailing, ConfigFailing: st.configFailing, LastError: st.lastErr,
			Paused: st.paused, Epoch: st.epoch, MasterEpoch: st.masterEpoch,
		}
		for _, h := range st.heals {
			cs.LastHeals = append(cs.LastHeals, healStatus(h))
		}
		cs.HealLoops = st.healLoops
		if st.feApplied != feAppliedUnknown {
			v := st.feApplied
			cs.FEApplied = &v
		}
		if st.lagEvents > 0 {
			cs.LagSeconds = now.Sub(st.caughtUpAt).Seconds()
		}
		if !st.lastErrAt.IsZero() {
			t := st.lastErrAt
			cs.LastErrorAt = &t
		}
		if !st.lastAppliedAt.IsZero() {
			t := st.lastAppliedAt
			cs.LastAppliedAt = &t
		}
		if !st.hmsCurrentAt.IsZero() {
			t := st.hmsCurrentAt
			cs.HMSCurrentAt = &t
		}
		if st.hmsErr != "" {
			t := st.hmsFailingSince
			cs.MetastoreError, cs.MetastoreFailingSince = st.hmsErr, &t
		}
		cs.Warning = a.warnings.of(l.cat.Name)
		s.Catalogs = append(s.Catalogs, cs)
	}
	s.NotReady = a.notReady()
	s.Ready = len(s.NotReady) == 0
	return s
}

// publishMetastore puts a catalog's metastore figures into its member status:
// the current id only from the master (a follower's, or a demoted master's,
// would be stale: only the master reads it), the failing reads from any member.
func publishMetastore(p *cursorstore.CatalogProgress, role string, c CatalogStatus) {
	if role == "master" && c.HMSCurrent >= 0 && c.HMSCurrentAt != nil {
		v := c.HMSCurrent
		p.MetastoreCurrent, p.MetastoreReadAt = &v, *c.HMSCurrentAt
	}
	if c.MetastoreError != "" && c.MetastoreFailingSince != nil {
		p.MetastoreError, p.MetastoreFailingSince = c.MetastoreError, *c.MetastoreFailingSince
	}
}

// notReady lists why the member is not ready (SPEC §7: cursor known, etcd watch
// fresh, FE reachable and authenticated); empty means ready.
func (a *Agent) notReady() []string {
	var why []string
	if !a.running.Load() {
		why = append(why, "not running")
	}
	fc := a.health.State()
	err, checked := fc.Err, fc.Checked
	switch {
	case !checked:
		why = append(why, "FE not checked yet")
	case err != nil:
		why = append(why, "FE check failed: "+err.Error())
	}
	if err := a.pause.notFresh(); err != nil {
		why = append(why, err.Error())
	}
	for _, l := range a.loops {
		st := l.rec.snapshot()
		own, auth, config, hmsConfig, lastErr := st.own, st.authFailing, st.configFailing, st.hmsConfigFailing, st.lastErr
		if own < 0 {
			why = append(why, fmt.Sprintf("catalog %s: cursor unknown", l.cat.Name))
		}
		if auth {
			why = append(why, fmt.Sprintf("catalog %s: FE refused hmssync's credentials", l.cat.Name))
		}
		if config {
			why = append(why, fmt.Sprintf("catalog %s: FE configuration error: %s", l.cat.Name, lastErr))
		}
		if hmsConfig {
			why = append(why, fmt.Sprintf("catalog %s: metastore connection misconfigured: %s", l.cat.Name, lastErr))
		}
		if err := l.watch.notFresh(); err != nil {
			why = append(why, fmt.Sprintf("catalog %s: %v", l.cat.Name, err))
		}
	}
	return why
}

// stuck lists the loops whose current step has made no progress (no external
// call completed) for longer than every deadline: /livez fails on them so that
// the orchestrator restarts the process.
func (a *Agent) stuck() []string {
	now := time.Now()
	var why []string
	for _, l := range a.loops {
		if d := l.stuckFor(now); d > a.stuckAfter {
			why = append(why, fmt.Sprintf("catalog %s: no call of the current step completed for %s", l.cat.Name, d.Round(time.Second)))
		}
	}
	return why
}

// redactURL drops any user information from u so that /status never shows a
// password, even a misconfigured one.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	p.User = nil
	return p.String()
}
