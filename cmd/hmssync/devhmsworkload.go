package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/hmssync/hmssync/hms/hmstest"
)

// devWorkload runs the fake metastore's workload on request, for the /workload
// routes of `dev hms`'s control API: process-level tests start it, stop it and
// cap it at a number of events.
type devWorkload struct {
	srv  *hmstest.Server
	ctx  context.Context // ends every run
	logf func(format string, args ...any)

	mu       sync.Mutex
	nextSeed int64
	run      *workloadRun // the latest run; nil before the first
}

// workloadRun is one run of the workload.
type workloadRun struct {
	state  workloadState
	cancel context.CancelFunc
	done   chan struct{}
}

// workloadState is what GET /workload answers.
type workloadState struct {
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

func newDevWorkload(ctx context.Context, srv *hmstest.Server, seed int64, logf func(string, ...any)) *devWorkload {
	return &devWorkload{srv: srv, ctx: ctx, logf: logf, nextSeed: seed}
}

// start stops the running workload, if any, and starts one at rate events per
// second (0: as fast as possible) that stops after limit events (0: never).
// Each run has a seed of its own, the first unused one from --seed on: a
// workload owns databases named after its seed, so a run may not reuse one
// whose databases exist (after a restart with --state, say).
func (w *devWorkload) start(rate float64, limit int) workloadState {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	dbs := w.srv.Databases()
	for slices.Contains(dbs, fmt.Sprintf("wl%d_db0", w.nextSeed)) {
		w.nextSeed++
	}
	ctx, cancel := context.WithCancel(w.ctx)
	r := &workloadRun{cancel: cancel, done: make(chan struct{}),
		state: workloadState{Running: true, Rate: rate, Seed: w.nextSeed, Limit: limit, StartedAfter: w.srv.CurrentEventID()}}
	w.nextSeed++
	w.run = r
	go func() {
		defer close(r.done)
		err := hmstest.Workload{Rate: rate, Seed: r.state.Seed, Events: limit}.Run(ctx, w.srv)
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

// stop ends the running workload, if any, and waits for it.
func (w *devWorkload) stop() workloadState {
	w.mu.Lock()
	r := w.run
	w.mu.Unlock()
	if r == nil {
		return workloadState{}
	}
	r.cancel()
	<-r.done
	return w.state()
}

func (w *devWorkload) state() workloadState {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.run == nil {
		return workloadState{}
	}
	return w.run.state
}

// handler serves GET, POST and DELETE /workload and passes everything else to
// next (the fake metastore's own control API).
func (w *devWorkload) handler(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", next)
	mux.HandleFunc("GET /workload", func(rw http.ResponseWriter, _ *http.Request) {
		writeDevJSON(rw, http.StatusOK, w.state())
	})
	mux.HandleFunc("DELETE /workload", func(rw http.ResponseWriter, _ *http.Request) {
		writeDevJSON(rw, http.StatusOK, w.stop())
	})
	mux.HandleFunc("POST /workload", func(rw http.ResponseWriter, r *http.Request) {
		var req struct {
			Rate   float64 `json:"rate"`
			Events int     `json:"events"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil && err != io.EOF {
			writeDevJSON(rw, http.StatusBadRequest, map[string]string{"error": `body: want {"rate": events per second, "events": stop after N (0: never)}: ` + err.Error()})
			return
		}
		if req.Rate < 0 || req.Events < 0 || (req.Rate == 0 && req.Events == 0) {
			// Rate 0 without a limit would append as fast as the machine
			// allows, for ever.
			writeDevJSON(rw, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("rate %v, events %d: want rate > 0 (events per second), or rate 0 (as fast as possible) with events > 0 (stop after that many; 0: until stopped)", req.Rate, req.Events)})
			return
		}
		writeDevJSON(rw, http.StatusOK, w.start(req.Rate, req.Events))
	})
	return mux
}

func writeDevJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
