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
	StartedAfter int64  `json:"started_after_event_id"`
	Error        string `json:"error,omitempty"`
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
func (w *WorkloadControl) Start(rate float64, limit int) WorkloadState {
	w.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	dbs := w.srv.Databases()
	for slices.Contains(dbs, fmt.Sprintf("wl%d_db0", w.nextSeed)) {
		w.nextSeed++
	}
	ctx, cancel := context.WithCancel(w.ctx)
	r := &workloadRun{cancel: cancel, done: make(chan struct{}),
		state: WorkloadState{Running: true, Rate: rate, Seed: w.nextSeed, Limit: limit, StartedAfter: w.srv.CurrentEventID()}}
	w.nextSeed++
	w.run = r
	go func() {
		defer close(r.done)
		err := Workload{Rate: rate, Seed: r.state.Seed, Events: limit}.Run(ctx, w.srv)
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
			Rate   float64 `json:"rate"`
			Events int     `json:"events"`
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
		writeJSON(rw, http.StatusOK, w.Start(req.Rate, req.Events))
	})
	return mux
}
