package fetest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// State is what GET /_fetest/state answers.
type State struct {
	Catalogs   map[string]CatalogState `json:"catalogs"`
	Statements []string                `json:"statements"`
	Changes    []ReceivedBatch         `json:"changes"`
	// Overlaps counts requests that arrived at this endpoint while another
	// was in flight there.
	Overlaps int `json:"overlaps"`
}

// CatalogState is one catalog's cache. Initialised is false for a catalog the FE
// never loaded (it then only has an applied event id).
type CatalogState struct {
	Initialised    bool                     `json:"initialised"`
	AppliedEventID int64                    `json:"applied_event_id"`
	RefreshedAt    time.Time                `json:"refreshed_at,omitzero"`
	Databases      map[string]DatabaseState `json:"databases"`
}

type DatabaseState struct {
	RefreshedAt time.Time             `json:"refreshed_at"`
	Tables      map[string]TableState `json:"tables"`
}

type TableState struct {
	RefreshedAt time.Time `json:"refreshed_at"`
	Partitions  []string  `json:"partitions"`
}

// State returns the endpoint's view: the (possibly shared) model, the request
// logs and this endpoint's overlap count.
func (s *Server) State() State {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	st := State{
		Catalogs:   map[string]CatalogState{},
		Statements: append([]string{}, m.statements...),
		Changes:    append([]ReceivedBatch{}, m.changes...),
		Overlaps:   s.Overlaps(),
	}
	for name, id := range m.applied {
		st.Catalogs[name] = CatalogState{AppliedEventID: id, Databases: map[string]DatabaseState{}}
	}
	for name, c := range m.catalogs {
		cs := CatalogState{Initialised: true, AppliedEventID: -1, RefreshedAt: c.refreshed, Databases: map[string]DatabaseState{}}
		if id, ok := m.applied[name]; ok {
			cs.AppliedEventID = id
		}
		for dbName, d := range c.dbs {
			ds := DatabaseState{RefreshedAt: d.refreshed, Tables: map[string]TableState{}}
			for tName, t := range d.tables {
				ds.Tables[tName] = TableState{RefreshedAt: t.refreshed, Partitions: append([]string{}, t.partitions...)}
			}
			cs.Databases[dbName] = ds
		}
		st.Catalogs[name] = cs
	}
	return st
}

func (s *Server) handleTestState(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.State())
}

func (s *Server) handleListFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"faults": s.Faults()})
}

func (s *Server) handleClearFaults(w http.ResponseWriter, _ *http.Request) {
	s.ClearFaults()
	writeJSON(w, http.StatusOK, map[string]any{"faults": []Fault{}})
}

// handleAddFault takes one fault object or an array of them. A fault with
// "refuse" takes the endpoint down after this answer, for that long.
func (s *Server) handleAddFault(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	var list []Fault
	if t := strings.TrimSpace(string(raw)); strings.HasPrefix(t, "[") {
		err = json.Unmarshal(raw, &list)
	} else {
		var f Fault
		err = json.Unmarshal(raw, &f)
		list = []Fault{f}
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want a fault object or an array of them: " + err.Error()})
		return
	}
	var refuse time.Duration
	for _, f := range list {
		refuse = max(refuse, f.Refuse)
		f.Refuse = 0
		if f != (Fault{Match: f.Match, Native: f.Native, SQL: f.SQL, Times: f.Times}) { // has an effect
			s.InjectFault(f)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"faults": s.Faults(), "refuse": refuse.String()})
	if refuse > 0 {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		s.refuseFor(refuse)
	}
}

// refuseFor takes the endpoint down now and up again after d (or at Close).
func (s *Server) refuseFor(d time.Duration) {
	if !s.enter() {
		return
	}
	go func() {
		defer s.active.Done()
		s.Down()
		if s.wait(context.Background(), d) {
			_ = s.Up()
		}
	}()
}

func isUnknownCatalog(msg string) bool { return strings.Contains(msg, "Unknown catalog") }
