package applier

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/change"
)

// partitionHeavyBatch is 1,000 events over 10 tables of one database: 50% add
// partitions, 20% drop, 25% refresh partitions (inserts, alters), 5% alter table.
func partitionHeavyBatch() change.Batch {
	r := rand.New(rand.NewPCG(1, 2))
	b := change.Batch{Catalog: "hive", From: 0, To: 1000}
	for id := int64(1); id <= 1000; id++ {
		d := change.Descriptor{EventID: id, DB: "sales", Table: fmt.Sprintf("t%d", r.IntN(10)),
			Partitions: []string{fmt.Sprintf("dt=2024-01-%02d", 1+r.IntN(28))}}
		switch n := r.IntN(100); {
		case n < 50:
			d.Op = change.AddPartitions
		case n < 70:
			d.Op = change.DropPartitions
		case n < 95:
			d.Op = change.RefreshPartitions
		default:
			d.Op, d.Partitions = change.RefreshTable, nil
		}
		b.Changes = append(b.Changes, d)
	}
	return b
}

// BenchmarkDorisStatementsPer1000Events measures the coalescing alone.
func BenchmarkDorisStatementsPer1000Events(b *testing.B) {
	batch := partitionHeavyBatch()
	var n int
	for b.Loop() {
		n = len(DorisStatements("hive", batch))
	}
	b.ReportMetric(float64(n), "statements/1000events")
}

// BenchmarkDorisApplyPer1000Events applies the batch through the doris dialect
// to a fake FE over HTTP and counts the statements the FE received.
func BenchmarkDorisApplyPer1000Events(b *testing.B) {
	batch := partitionHeavyBatch()
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	a, err := New(Config{Dialect: DialectDoris, URL: fe.URL, User: "root"})
	if err != nil {
		b.Fatal(err)
	}
	applies := 0
	for b.Loop() {
		if err := a.Apply(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
		applies++
	}
	b.ReportMetric(float64(len(fe.Statements()))/float64(applies), "statements/1000events")
}

func TestPartitionHeavyBatchNeedsAtMostTenStatements(t *testing.T) {
	got := DorisStatements("hive", partitionHeavyBatch())
	if len(got) > 10 {
		t.Fatalf("%d statements for 1,000 partition events over 10 tables: %q", len(got), got)
	}
	for _, s := range got {
		if st, err := fetest.ParseStatement(s); err != nil || st.Kind != fetest.RefreshTable {
			t.Errorf("%q is not a REFRESH TABLE", s)
		}
	}
}
