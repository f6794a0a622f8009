package fetest

import (
	"net/http"
	"time"
)

// Summary is what GET /_fetest/summary answers: the state of each catalog's
// cache and counts of what the FE received, without the model's content or the
// request logs (GET /_fetest/state has both, and grows with every request).
// Its size depends only on the number of catalogs.
type Summary struct {
	Catalogs map[string]CatalogSummary `json:"catalogs"`
	// Statements and Changes count the SQL statements and native batches
	// received (a cluster's, for a shared model); FullRefreshes the native
	// batches among them that were full refreshes.
	Statements    int `json:"statements"`
	Changes       int `json:"changes"`
	FullRefreshes int `json:"full_refreshes"`
	// LastChange is the newest native batch received, without its changes.
	LastChange *BatchSummary `json:"last_change,omitempty"`
	Overlaps   int           `json:"overlaps"`
}

// CatalogSummary is one catalog's cache in numbers.
type CatalogSummary struct {
	Initialised    bool      `json:"initialised"`
	AppliedEventID int64     `json:"applied_event_id"`
	RefreshedAt    time.Time `json:"refreshed_at,omitzero"`
	Databases      int       `json:"databases"`
	Tables         int       `json:"tables"`
	Partitions     int       `json:"partitions"`
}

// BatchSummary names a native batch.
type BatchSummary struct {
	Catalog     string `json:"catalog"`
	From        int64  `json:"from_event_id"`
	To          int64  `json:"to_event_id"`
	FullRefresh bool   `json:"full_refresh"`
	Changes     int    `json:"changes"`
}

// Summary returns the endpoint's view in numbers.
func (s *Server) Summary() Summary {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	sum := Summary{Catalogs: map[string]CatalogSummary{}, Statements: len(m.statements), Changes: len(m.changes), Overlaps: s.Overlaps()}
	for _, b := range m.changes {
		if b.FullRefresh {
			sum.FullRefreshes++
		}
	}
	if n := len(m.changes); n > 0 {
		b := m.changes[n-1]
		sum.LastChange = &BatchSummary{Catalog: b.Catalog, From: b.From, To: b.To, FullRefresh: b.FullRefresh, Changes: len(b.Changes)}
	}
	for name, id := range m.applied {
		sum.Catalogs[name] = CatalogSummary{AppliedEventID: id}
	}
	for name, c := range m.catalogs {
		cs := CatalogSummary{Initialised: true, AppliedEventID: -1, RefreshedAt: c.refreshed, Databases: len(c.dbs)}
		if id, ok := m.applied[name]; ok {
			cs.AppliedEventID = id
		}
		for _, d := range c.dbs {
			cs.Tables += len(d.tables)
			for _, t := range d.tables {
				cs.Partitions += len(t.partitions)
			}
		}
		sum.Catalogs[name] = cs
	}
	return sum
}

// DropCache makes the FE forget catalog's cache and applied event id (every
// catalog's for ""), as if it had restarted empty: the next native state query
// reports -1 and the catalog is loaded again on first use. The request logs
// are kept. In a Cluster this affects the shared model.
func (s *Server) DropCache(catalog string) {
	if catalog == "" {
		s.m.restart()
		return
	}
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.catalogs, catalog)
	delete(m.applied, catalog)
}

func (s *Server) handleSummary(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Summary())
}

// handleDropCache is POST /_fetest/drop-cache[?catalog=c]; it answers the
// summary after the drop.
func (s *Server) handleDropCache(w http.ResponseWriter, r *http.Request) {
	s.DropCache(r.URL.Query().Get("catalog"))
	writeJSON(w, http.StatusOK, s.Summary())
}
