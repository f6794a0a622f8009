package hmstest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
)

// WorkloadControl runs the fake metastore's workload on request, for the
// /workload routes of its control API (`hmssync dev hms`): process-level tests
// start it, stop it and cap it at a number of events.
type WorkloadControl struct {
	srv  *Server
	ctx  context.Context // ends every run
	logf func(format string, args ...any)

	mu       sync.Mutex
	nextSeed int64
	run      *workloadRun // the latest run; nil before the first
	// transactional is whether runs use DefaultTxnMix rather than
	// DefaultMix when a request does not say.
	transactional bool
}

// workloadRun is one run of the workload.
type workloadRun struct {
	state  WorkloadState
	cancel context.CancelFunc
	done   chan struct{}
}

// WorkloadState is what GET /workload answers: the latest run.
type WorkloadState struct {
	Running bool    `json:"running"`
	Rate    float64 `json:"rate"`
	Seed    int64   `json:"seed"`
	// Limit is the number of events the run stops after (its databases and
	// tables included); 0: until stopped.
	Limit int `json:"limit"`
	// StartedAfter is the metastore's current event id when the run started.
	StartedAfter int64 `json:"started_after_event_id"`
	// Transactional is whether the run's mix has transactional steps
	// (DefaultTxnMix; else DefaultMix).
	Transactional bool   `json:"transactional"`
	Error         string `json:"error,omitempty"`
}

// NewWorkloadControl controls srv's workload; every run ends with ctx. Runs
// take seeds from seed on; logf reports a run that failed.
func NewWorkloadControl(ctx context.Context, srv *Server, seed int64, logf func(string, ...any)) *WorkloadControl {
	return &WorkloadControl{srv: srv, ctx: ctx, logf: logf, nextSeed: seed}
}

// Start stops the running workload, if any, and starts one at rate events per
// second (0: as fast as possible) that stops after limit events (0: never).
// Each run has a seed of its own, the first unused one from --seed on: a
// workload owns databases named after its seed, so a run may not reuse one
// whose databases exist (after a restart with --state, say).
// SetTransactional sets whether runs that do not say use DefaultTxnMix
// (transactional steps) rather than DefaultMix.
func (w *WorkloadControl) SetTransactional(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.transactional = on
}

// Start starts a run with the default mix (SetTransactional); see StartMix.
func (w *WorkloadControl) Start(rate float64, limit int) WorkloadState {
	w.mu.Lock()
	txn := w.transactional
	w.mu.Unlock()
	return w.StartMix(rate, limit, txn)
}

// StartMix is Start with DefaultTxnMix if transactional, else DefaultMix.
func (w *WorkloadControl) StartMix(rate float64, limit int, transactional bool) WorkloadState {
	w.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	dbs := w.srv.Databases()
	for slices.Contains(dbs, fmt.Sprintf("wl%d_db0", w.nextSeed)) {
		w.nextSeed++
	}
	ctx, cancel := context.WithCancel(w.ctx)
	r := &workloadRun{cancel: cancel, done: make(chan struct{}),
		state: WorkloadState{Running: true, Rate: rate, Seed: w.nextSeed, Limit: limit, StartedAfter: w.srv.CurrentEventID(), Transactional: transactional}}
	mix := DefaultMix
	if transactional {
		mix = DefaultTxnMix
	}
	w.nextSeed++
	w.run = r
	go func() {
		defer close(r.done)
		err := Workload{Rate: rate, Seed: r.state.Seed, Events: limit, Mix: mix}.Run(ctx, w.srv)
		w.mu.Lock()
		r.state.Running = false
		if err != nil {
			r.state.Error = err.Error()
		}
		w.mu.Unlock()
		if err != nil {
			w.logf("workload (seed %d) failed: %v\n", r.state.Seed, err)
		}
	}()
	return r.state
}

// Stop ends the running workload, if any, and waits for it.
func (w *WorkloadControl) Stop() WorkloadState {
	w.mu.Lock()
	r := w.run
	w.mu.Unlock()
	if r == nil {
		return WorkloadState{}
	}
	r.cancel()
	<-r.done
	return w.State()
}

// State is the latest run's (zero before the first).
func (w *WorkloadControl) State() WorkloadState {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.run == nil {
		return WorkloadState{}
	}
	return w.run.state
}

// Handler serves GET, POST and DELETE /workload and passes everything else to
// next (the fake metastore's own control API).
func (w *WorkloadControl) Handler(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", next)
	mux.HandleFunc("GET /workload", func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, http.StatusOK, w.State())
	})
	mux.HandleFunc("DELETE /workload", func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, http.StatusOK, w.Stop())
	})
	mux.HandleFunc("POST /workload", func(rw http.ResponseWriter, r *http.Request) {
		var req struct {
			Rate          float64 `json:"rate"`
			Events        int     `json:"events"`
			Transactional *bool   `json:"transactional"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil && err != io.EOF {
			writeJSON(rw, http.StatusBadRequest, map[string]string{"error": `body: want {"rate": events per second, "events": stop after N (0: never)}: ` + err.Error()})
			return
		}
		if req.Rate < 0 || req.Events < 0 || (req.Rate == 0 && req.Events == 0) {
			// Rate 0 without a limit would append as fast as the machine
			// allows, for ever.
			writeJSON(rw, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("rate %v, events %d: want rate > 0 (events per second), or rate 0 (as fast as possible) with events > 0 (stop after that many; 0: until stopped)", req.Rate, req.Events)})
			return
		}
		if req.Transactional == nil {
			writeJSON(rw, http.StatusOK, w.Start(req.Rate, req.Events))
			return
		}
		writeJSON(rw, http.StatusOK, w.StartMix(req.Rate, req.Events, *req.Transactional))
	})
	return mux
}
