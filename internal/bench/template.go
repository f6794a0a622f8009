package bench

import (
	"fmt"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// benchTemplate is the backlog every run drains: hmstest.BenchMix (or
// BenchTxnMix), generated
// once per invocation by the fake metastore's own workload, then appended
// verbatim (with new ids) to each run's fresh metastore.
type benchTemplate struct {
	events []message.Event
	// src holds the same events, for the raw fetch loop.
	src *hmstest.Server
	// touched[i] is what event i changes in an FE's caches, derived from the
	// decoded descriptors by SPEC §5's rules, not by the applier's code.
	touched []touched
}

// touched is what one event makes an FE reload: tables (db.table), database
// table lists and the catalog's database list.
type touched struct {
	tables, dbs []string
	catalog     bool
}

func newBenchTemplate(n int, mix hmstest.Mix) (*benchTemplate, error) {
	src := hmstest.NewServer()
	if err := hmstest.Preload(src, n, mix); err != nil {
		src.Close()
		return nil, fmt.Errorf("bench: preload %d events: %w", n, err)
	}
	t := &benchTemplate{events: src.Events(), src: src}
	dec := message.NewDecoder("")
	for _, ev := range t.events {
		ds, err := dec.Decode(ev)
		if err != nil {
			src.Close()
			return nil, fmt.Errorf("bench: the generated event %d (%s) does not decode: %w", ev.ID, ev.Type, err)
		}
		var tc touched
		for _, d := range ds {
			table := d.DB + "." + d.Table
			switch d.Op {
			case change.RegisterDatabase, change.UnregisterDatabase, change.RenameDatabase:
				tc.catalog = true
			case change.RegisterTable, change.UnregisterTable:
				tc.tables = append(tc.tables, table)
				tc.dbs = append(tc.dbs, d.DB)
			case change.RenameTable:
				tc.tables = append(tc.tables, table, d.DBAfter+"."+d.TableAfter)
				tc.dbs = append(tc.dbs, d.DB, d.DBAfter)
			default:
				tc.tables = append(tc.tables, table)
			}
		}
		t.touched = append(t.touched, tc)
	}
	return t, nil
}

// affected counts, for the batch of events (from, to] of a run (ids start at 1),
// the distinct tables it touches and the distinct objects an FE must reload:
// those tables, the databases whose table list changed, the catalog's database
// list.
func (t *benchTemplate) affected(from, to int64) (tables, objects int) {
	ts, dbs, catalog := map[string]bool{}, map[string]bool{}, false
	for i := from; i < to && i < int64(len(t.touched)); i++ {
		tc := t.touched[i]
		for _, x := range tc.tables {
			ts[x] = true
		}
		for _, x := range tc.dbs {
			dbs[x] = true
		}
		catalog = catalog || tc.catalog
	}
	objects = len(ts) + len(dbs)
	if catalog {
		objects++
	}
	return len(ts), objects
}

func (t *benchTemplate) close() { t.src.Close() }
