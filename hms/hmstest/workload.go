package hmstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Mix weighs the kinds of change a Workload makes; only ratios matter.
type Mix struct {
	// Partition: ADD_PARTITION and ALTER_PARTITION (mostly in place, now and
	// then with new values), with an occasional DROP_PARTITION to bound growth.
	Partition float64 `json:"partition"`
	// Insert: INSERT into a partition or an unpartitioned table.
	Insert float64 `json:"insert"`
	// AlterTable: ALTER_TABLE without rename (a column added).
	AlterTable float64 `json:"alter_table"`
	// CreateDropTable: CREATE_TABLE or DROP_TABLE.
	CreateDropTable float64 `json:"create_drop_table"`
	// RenameTable: ALTER_TABLE renaming a table, sometimes into another database.
	RenameTable float64 `json:"rename_table"`
	// TxnStats: OPEN_TXN, COMMIT_TXN, ABORT_TXN and column statistics events,
	// which change nothing an FE caches.
	TxnStats float64 `json:"txn_stats"`
	// Transactional: steps on insert-only transactional tables (with any
	// share above 0, a quarter of the tables the workload creates are
	// transactional): opening a transaction (OPEN_TXN), its first write to
	// one of up to three tables (ALLOC_WRITE_ID_EVENT), its end (COMMIT_TXN,
	// one in five an ABORT_TXN; a transaction that wrote nothing is a
	// read-only one), and one step in twenty a compaction (Hive 4: OPEN_TXN,
	// COMMIT_TXN, COMMIT_COMPACTION_EVENT). Transactions stay open across
	// other steps, at most four at a time. A committed write changes what
	// readers of the table see (Server.TransactionalData) and no name, so an
	// FE that misses it holds stale data while its names match.
	Transactional float64 `json:"transactional"`
}

// BenchMix is the project benchmark's mix: 70% partition events, 10% inserts,
// 10% table alters, 5% table creates and drops, 5% transaction and statistics
// events.
var BenchMix = Mix{Partition: 70, Insert: 10, AlterTable: 10, CreateDropTable: 5, TxnStats: 5}

// DefaultMix is the mix of Workload when none is given: BenchMix with renames.
var DefaultMix = Mix{Partition: 62, Insert: 10, AlterTable: 8, CreateDropTable: 7, RenameTable: 3, TxnStats: 10}

// TxnShare is the share of transactional steps (Mix.Transactional) that
// BenchTxnMix and DefaultTxnMix add: 5%, taken from the partition steps.
const TxnShare = 5

// BenchTxnMix is BenchMix with transactional steps: 65% partition events, 5%
// transactional steps, the rest as in BenchMix.
var BenchTxnMix = Mix{Partition: 70 - TxnShare, Insert: 10, AlterTable: 10, CreateDropTable: 5, TxnStats: 5, Transactional: TxnShare}

// DefaultTxnMix is DefaultMix with transactional steps (57% partition, 5%
// transactional).
var DefaultTxnMix = Mix{Partition: 62 - TxnShare, Insert: 10, AlterTable: 8, CreateDropTable: 7, RenameTable: 3, TxnStats: 10, Transactional: TxnShare}

// Workload drives a Server's mutations like a busy warehouse: databases,
// partitioned and unpartitioned tables, partitions, inserts, renames and, with
// Mix.Transactional, transactions on transactional tables. Every step is one
// mutation that appends exactly one event, but for a compaction (three events
// under TxnHive4, made only while the event budget has room). It owns the
// databases it creates (wl<Seed>_db<N>); other mutations of those databases may
// make steps fail.
type Workload struct {
	// Rate is steps (events) per second; 0 or less runs as fast as possible.
	Rate float64
	// Seed makes the sequence reproducible.
	Seed int64
	// Mix weighs the kinds of steps; the zero Mix means DefaultMix.
	Mix Mix
	// Databases and Tables size the warehouse: Tables tables spread over
	// Databases databases (defaults 2 and 20).
	Databases, Tables int
	// Events stops Run after this many events, set-up included (0: until ctx ends).
	Events int
}

// Preload appends n events to srv as fast as possible with the given mix (zero
// means BenchMix) over 50 partitioned tables in one database, for benchmarks.
// With the server's default format half the messages are json-0.2 and half
// gzip(json-2.0).
func Preload(srv *Server, n int, mix Mix) error {
	if mix == (Mix{}) {
		mix = BenchMix
	}
	w := Workload{Seed: 1, Mix: mix, Databases: 1, Tables: 50, Events: n}
	return w.Run(context.Background(), srv)
}

type wlTable struct {
	db, name      string
	partitioned   bool
	transactional bool
	parts         [][]string // live partitions' values, oldest first
	day           int        // next partition day
}

type workloadState struct {
	w      Workload
	srv    *Server
	rng    *rand.Rand
	dbs    []string
	tables []*wlTable
	serial int
	txns   []int64
	events int
	open   []*wlTxn // transactional steps' open transactions, oldest first
}

// wlTxn is an open transaction of the transactional steps.
type wlTxn struct {
	id     int64
	tables []*wlTable // written (allocated), in order
	want   int        // how many tables it writes before it ends
}

// Run creates the warehouse, then makes steps at w.Rate until ctx ends (nil is
// returned) or w.Events events were appended. A failed mutation is returned.
func (w Workload) Run(ctx context.Context, srv *Server) error {
	if w.Mix == (Mix{}) {
		w.Mix = DefaultMix
	}
	if w.Databases <= 0 {
		w.Databases = 2
	}
	if w.Tables <= 0 {
		w.Tables = 20
	}
	st := &workloadState{w: w, srv: srv, rng: rand.New(rand.NewPCG(uint64(w.Seed), 0x686d7374657374))}
	for i := 0; i < w.Databases; i++ {
		if st.done() {
			return nil
		}
		db := fmt.Sprintf("wl%d_db%d", w.Seed, i)
		if err := srv.CreateDatabase(db); err != nil {
			return err
		}
		st.events++
		st.dbs = append(st.dbs, db)
	}
	for i := 0; i < w.Tables; i++ {
		if st.done() {
			return nil
		}
		if err := st.createTable(); err != nil {
			return err
		}
		st.events++
	}
	var tick *time.Ticker
	if w.Rate > 0 {
		tick = time.NewTicker(time.Duration(float64(time.Second) / w.Rate))
		defer tick.Stop()
	}
	for !st.done() {
		if tick != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		} else if ctx.Err() != nil {
			return nil
		}
		if err := st.step(); err != nil {
			return fmt.Errorf("workload step %d: %w", st.events, err)
		}
	}
	return nil
}

func (st *workloadState) done() bool { return st.w.Events > 0 && st.events >= st.w.Events }

func (st *workloadState) step() error {
	m := st.w.Mix
	total := m.Partition + m.Insert + m.AlterTable + m.CreateDropTable + m.RenameTable + m.TxnStats + m.Transactional
	r := st.rng.Float64() * total
	var err error
	switch {
	case r < m.Partition:
		err = st.partitionStep()
	case r < m.Partition+m.Insert:
		var n int
		n, err = st.insert()
		st.events += n - 1
	case r < m.Partition+m.Insert+m.AlterTable:
		t := st.tables[st.rng.IntN(len(st.tables))]
		err = st.srv.AlterTable(t.db, t.name)
	case r < m.Partition+m.Insert+m.AlterTable+m.CreateDropTable:
		if len(st.tables) >= st.w.Tables {
			i := st.rng.IntN(len(st.tables))
			t := st.tables[i]
			if tx := st.writer(t); tx != nil {
				err = st.endTxn(tx, false) // Hive's drop waits for the lock: the transaction ends first
				break
			}
			err = st.srv.DropTable(t.db, t.name)
			st.tables = append(st.tables[:i], st.tables[i+1:]...)
		} else {
			err = st.createTable()
		}
	case r < m.Partition+m.Insert+m.AlterTable+m.CreateDropTable+m.RenameTable:
		t := st.tables[st.rng.IntN(len(st.tables))]
		if tx := st.writer(t); tx != nil {
			err = st.endTxn(tx, false)
			break
		}
		st.serial++
		db := st.dbs[st.rng.IntN(len(st.dbs))]
		name := fmt.Sprintf("t%d", st.serial)
		err = st.srv.RenameTable(t.db, t.name, db, name)
		t.db, t.name = db, name
	case r < m.Partition+m.Insert+m.AlterTable+m.CreateDropTable+m.RenameTable+m.TxnStats:
		err = st.txnStep()
	default:
		var n int
		n, err = st.transactionalStep()
		st.events += n - 1
	}
	if err == nil {
		st.events++
	}
	return err
}

func (st *workloadState) createTable() error {
	st.serial++
	t := &wlTable{db: st.dbs[st.rng.IntN(len(st.dbs))], name: fmt.Sprintf("t%d", st.serial)}
	// Most tables are partitioned by day; Preload's (a single database) all are.
	t.partitioned = st.w.Databases == 1 || st.rng.IntN(5) != 0
	// Drawn only with transactional steps, so that a mix without them makes
	// the same log as before they existed.
	t.transactional = st.w.Mix.Transactional > 0 && st.rng.IntN(4) == 0
	spec := Table{DB: t.db, Name: t.name, Columns: []string{"id", "amount", "note"}, Transactional: t.transactional}
	if t.partitioned {
		spec.PartitionKeys = []string{"dt", "region"}
	}
	if err := st.srv.CreateTable(spec); err != nil {
		return err
	}
	st.tables = append(st.tables, t)
	return nil
}

var regions = []string{"eu", "us-east", "ap/south", "ünï"}

func (st *workloadState) partitioned() *wlTable {
	for range 8 {
		if t := st.tables[st.rng.IntN(len(st.tables))]; t.partitioned {
			return t
		}
	}
	for _, t := range st.tables {
		if t.partitioned {
			return t
		}
	}
	return nil
}

func (st *workloadState) partitionStep() error {
	t := st.partitioned()
	if t == nil {
		return st.createTable()
	}
	r := st.rng.IntN(10)
	switch {
	case len(t.parts) == 0 || r < 5:
		t.day++
		v := []string{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, t.day).Format("2006-01-02"), regions[st.rng.IntN(len(regions))]}
		if err := st.srv.AddPartitions(t.db, t.name, v); err != nil {
			return err
		}
		t.parts = append(t.parts, v)
	case r < 9 || len(t.parts) < 4:
		i := st.rng.IntN(len(t.parts))
		before := t.parts[i]
		after := before
		if st.rng.IntN(10) == 0 { // now and then the values change
			t.day++
			after = []string{before[0], fmt.Sprintf("%s-%d", before[1], t.day)}
		}
		if err := st.srv.AlterPartition(t.db, t.name, before, after); err != nil {
			return err
		}
		t.parts[i] = after
	default:
		if err := st.srv.DropPartitions(t.db, t.name, t.parts[0]); err != nil {
			return err
		}
		t.parts = t.parts[1:]
	}
	return nil
}

// insert makes an insert step and returns how many events it appended.
func (st *workloadState) insert() (int, error) {
	t := st.tables[st.rng.IntN(len(st.tables))]
	if t.transactional {
		// An INSERT into it would be a whole transaction (three events):
		// write within a transactional step's transaction instead.
		return st.transactionalStep()
	}
	if !t.partitioned {
		return 1, st.srv.Insert(t.db, t.name, nil)
	}
	if len(t.parts) == 0 {
		return 1, st.partitionStep()
	}
	return 1, st.srv.Insert(t.db, t.name, t.parts[st.rng.IntN(len(t.parts))])
}

func (st *workloadState) txnStep() error {
	switch r := st.rng.IntN(4); {
	case r == 0 && len(st.tables) > 0:
		t := st.tables[st.rng.IntN(len(st.tables))]
		return st.srv.UpdateTableColumnStats(t.db, t.name)
	case len(st.txns) > 0 && r >= 2:
		txn := st.txns[0]
		st.txns = st.txns[1:]
		return st.srv.CommitTxn(txn, r == 3)
	default:
		txn, err := st.srv.OpenTxn()
		st.txns = append(st.txns, txn)
		return err
	}
}

// maxOpenTxns bounds the transactional steps' open transactions.
const maxOpenTxns = 4

// writer is the open transaction that writes t, nil if none.
func (st *workloadState) writer(t *wlTable) *wlTxn {
	for _, tx := range st.open {
		if slices.Contains(tx.tables, t) {
			return tx
		}
	}
	return nil
}

func (st *workloadState) endTxn(tx *wlTxn, abort bool) error {
	st.open = slices.DeleteFunc(st.open, func(o *wlTxn) bool { return o == tx })
	return st.srv.CommitTxn(tx.id, abort)
}

// transactionalStep makes one step of Mix.Transactional and returns how many
// events it appended (one but for a compaction).
func (st *workloadState) transactionalStep() (int, error) {
	var acid []*wlTable
	for _, t := range st.tables {
		if t.transactional {
			acid = append(acid, t)
		}
	}
	if len(acid) == 0 {
		st.serial++
		t := &wlTable{db: st.dbs[st.rng.IntN(len(st.dbs))], name: fmt.Sprintf("t%d", st.serial), transactional: true}
		if err := st.srv.CreateTable(Table{DB: t.db, Name: t.name, Columns: []string{"id", "amount", "note"}, Transactional: true}); err != nil {
			return 0, err
		}
		st.tables = append(st.tables, t)
		return 1, nil
	}
	r := st.rng.IntN(20)
	compactEvents := 3
	if st.srv.TxnStyle() == TxnHive3 {
		compactEvents = 0 // Hive 3.1's compactor logs nothing: the step would append no event
	}
	switch {
	case r == 0 && compactEvents > 0 && (st.w.Events == 0 || st.w.Events-st.events >= compactEvents):
		t := acid[st.rng.IntN(len(acid))]
		var values []string
		if t.partitioned {
			if len(t.parts) == 0 {
				return 1, st.srv.AddPartitions(t.db, t.name, st.newPartition(t))
			}
			values = t.parts[st.rng.IntN(len(t.parts))]
		}
		return compactEvents, st.srv.Compact(t.db, t.name, values)
	case len(st.open) == 0 || (r < 7 && len(st.open) < maxOpenTxns):
		id, err := st.srv.OpenTxn()
		if err != nil {
			return 0, err
		}
		st.open = append(st.open, &wlTxn{id: id, want: st.rng.IntN(4)}) // 0: read-only
		return 1, nil
	}
	tx := st.open[st.rng.IntN(len(st.open))]
	if len(tx.tables) < tx.want && len(tx.tables) < len(acid) {
		t := acid[st.rng.IntN(len(acid))]
		if w := st.writer(t); w != nil {
			// Another transaction writes it: end that one (Hive would make
			// this writer wait for its lock).
			return 1, st.endTxn(w, false)
		}
		var values []string
		if t.partitioned {
			if len(t.parts) == 0 {
				return 1, st.srv.AddPartitions(t.db, t.name, st.newPartition(t))
			}
			values = t.parts[st.rng.IntN(len(t.parts))]
		}
		tx.tables = append(tx.tables, t)
		return 1, st.srv.TxnWrite(tx.id, t.db, t.name, values)
	}
	return 1, st.endTxn(tx, len(tx.tables) > 0 && st.rng.IntN(5) == 0)
}

// newPartition picks the values of t's next partition and records them.
func (st *workloadState) newPartition(t *wlTable) []string {
	t.day++
	v := []string{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, t.day).Format("2006-01-02"), regions[st.rng.IntN(len(regions))]}
	t.parts = append(t.parts, v)
	return v
}
