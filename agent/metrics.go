package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the series of SPEC §7, on a registry owned by one Agent (never the
// global default registry, so that several agents can live in one process, as
// they do in the demo and the tests).
type metrics struct {
	reg *prometheus.Registry

	eventsReceived *prometheus.CounterVec // catalog, type
	eventsApplied  *prometheus.CounterVec // catalog, type
	eventsSkipped  *prometheus.CounterVec // catalog, type
	eventsFailed   *prometheus.CounterVec // catalog, type

	cursor       *prometheus.GaugeVec // catalog
	masterCursor *prometheus.GaugeVec // catalog
	hmsCurrent   *prometheus.GaugeVec // catalog
	lagEvents    *prometheus.GaugeVec // catalog
	lagSeconds   *prometheus.GaugeVec // catalog

	fetchSeconds  *prometheus.HistogramVec // catalog
	decodeSeconds *prometheus.HistogramVec // catalog
	applySeconds  *prometheus.HistogramVec // catalog, kind (changes|full_refresh)
	commitSeconds *prometheus.HistogramVec // catalog

	feStatements    *prometheus.CounterVec // catalog, result
	fullRefreshes   *prometheus.CounterVec // catalog, reason
	selfHeals       *prometheus.CounterVec // catalog, scope
	selfHealLoops   *prometheus.GaugeVec   // catalog
	retries         *prometheus.CounterVec // catalog, class
	role            *prometheus.GaugeVec   // role
	leaderChanges   prometheus.Counter
	fencedRejected  *prometheus.CounterVec // catalog, reason
	paused          prometheus.Gauge
	catalogPaused   *prometheus.GaugeVec // catalog
	pushdownDBs     *prometheus.GaugeVec // catalog
	feAuthFailures  prometheus.Counter
	statusPublishes *prometheus.CounterVec // result

	txnUnknownCommits *prometheus.CounterVec // catalog
	txnDropped        *prometheus.CounterVec // catalog, reason
	txnOpen           *prometheus.GaugeVec   // catalog
}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "hmssync", Name: name, Help: help}, labels)
		f(v)
		return v
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "hmssync", Name: name, Help: help}, labels)
		f(v)
		return v
	}
	// Buckets from 1 ms to about 65 s: a fetch or an apply is milliseconds when
	// healthy and tens of seconds when an FE struggles.
	buckets := prometheus.ExponentialBuckets(0.001, 4, 9)
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "hmssync", Name: name, Help: help, Buckets: buckets}, labels)
		f(v)
		return v
	}
	m := &metrics{
		reg:            reg,
		eventsReceived: counter("events_received_total", "HMS notification events fetched, by type.", "catalog", "type"),
		eventsApplied:  counter("events_applied_total", "Events whose changes were applied to the FE (or, for followers of a cluster-scope dialect, covered by the master), by type.", "catalog", "type"),
		eventsSkipped:  counter("events_skipped_total", "Events that yielded no change after decoding and filtering, by type.", "catalog", "type"),
		eventsFailed:   counter("events_failed_total", "Events that could not be decoded (poison events; each one triggers a self-heal), by type.", "catalog", "type"),
		cursor:         gauge("cursor_event_id", "This member's cursor: the last event id applied to its FE (-1 unknown).", "catalog"),
		masterCursor:   gauge("master_cursor_event_id", "The committed master cursor in etcd (-1 unknown or reset).", "catalog"),
		hmsCurrent:     gauge("hms_current_event_id", "The metastore's current notification event id, as last read.", "catalog"),
		lagEvents:      gauge("lag_events", "Events between this member's cursor and the newest id it knows of (the metastore's for the master, the master cursor for followers).", "catalog"),
		lagSeconds:     gauge("lag_seconds", "Seconds since this member was last caught up (0 when caught up).", "catalog"),
		fetchSeconds:   hist("fetch_duration_seconds", "Latency of reading a batch of events from the metastore.", "catalog"),
		decodeSeconds:  hist("decode_duration_seconds", "Latency of decoding and filtering a batch of events.", "catalog"),
		applySeconds:   hist("apply_duration_seconds", "Latency of applying a batch (or a full refresh) to the FE.", "catalog", "kind"),
		commitSeconds:  hist("commit_duration_seconds", "Latency of the fenced master cursor commit to etcd.", "catalog"),
		feStatements:   counter("fe_statements_total", "Statements (doris) or requests (native, log) sent to the FE, by result: ok, transient, deterministic, auth, configuration.", "catalog", "result"),
		fullRefreshes:  counter("full_refreshes_total", "Full catalog refreshes, by reason: initial, gap, reset, self_heal, operator, epoch (this member's cursor was of another lineage), fe_behind (the FE reported less than it was sent).", "catalog", "reason"),
		selfHeals:      counter("self_heals_total", "Deterministic failures (an event that cannot be decoded, a change the FE refuses) healed, by the scope refreshed: table, database, or catalog (the cursor -1 and a full refresh).", "catalog", "scope"),
		selfHealLoops:  gauge("self_heal_loops", "Objects (tables or databases) healed more than self_heal.max_per_hour times in the last hour: their events keep failing.", "catalog"),
		retries:        counter("retries_total", "Failed steps retried, by class: transient (in place, with backoff), deterministic (a full refresh that failed deterministically, with backoff), auth, configuration and hms_config (slowly, every retry.auth_interval).", "catalog", "class"),
		role:           gauge("role", "1 for this member's current role (master or follower), 0 otherwise.", "role"),
		leaderChanges: func() prometheus.Counter {
			c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "hmssync", Name: "leader_transitions_total", Help: "Times this member became master or stopped being master."})
			f(c)
			return c
		}(),
		fencedRejected: counter("fenced_write_rejections_total", "Fenced cursor commits etcd refused, by reason: not_leader, conflict, outcome_unknown, backwards, new_lineage.", "catalog", "reason"),
		paused: func() prometheus.Gauge {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "hmssync", Name: "paused", Help: "1 while the pause key is present (the master does not advance)."})
			f(g)
			return g
		}(),
		catalogPaused: gauge("catalog_paused", "1 while this member, as master, holds the catalog for the pause key: its loop saw the key at the top of a cycle and has done nothing since (hmssync_paused says only that the key is present; a cycle already running finishes first).", "catalog"),
		pushdownDBs:   gauge("catalog_pushdown_databases", "How many databases the metastore filtered this member's last fetch to (push-down: the master of a catalog whose include patterns name its databases, filter_pushdown on, a Hive 4 metastore); 0 when it read the whole log (push-down off or not provable, a follower, a metastore that ignores the filter).", "catalog"),
		feAuthFailures: func() prometheus.Counter {
			c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "hmssync", Name: "fe_auth_failures_total", Help: "FE calls refused for authentication (a configuration error)."})
			f(c)
			return c
		}(),
		statusPublishes:   counter("status_publishes_total", "Member status writes to etcd, by result: ok, error.", "result"),
		txnUnknownCommits: counter("txn_unknown_commits_total", "COMMIT_TXN events of transactions the open-transaction state could not answer for (opened before tracking began, the state lost, a bound exceeded): each batch holding any is applied as a full refresh.", "catalog"),
		txnDropped:        counter("txn_dropped_total", "Open transactions dropped from the open-transaction state, by reason: timeout (older than hive.txn.timeout), open_cap, size_cap, table_cap (its tables no longer kept). Their commits are unknown commits.", "catalog", "reason"),
		txnOpen:           gauge("txn_open", "Open transactions that wrote a table, as the open-transaction state holds them.", "catalog"),
	}
	m.statusPublishes.WithLabelValues("ok")
	m.statusPublishes.WithLabelValues("error")
	m.role.WithLabelValues("master").Set(0)
	m.role.WithLabelValues("follower").Set(1)
	return m
}

// observeStatusPublish counts one write of the member's status key.
func (m *metrics) observeStatusPublish(err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.statusPublishes.WithLabelValues(result).Inc()
}
