package applier

import (
	"context"
	"testing"

	"github.com/hmssync/hmssync/change"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestLogDialectLogsWhatItWouldApply(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	a, err := New(Config{Dialect: DialectLog, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Dialect() != "log" || a.Scope() != ScopeLocal {
		t.Errorf("dialect %q scope %q", a.Dialect(), a.Scope())
	}
	if err := a.Check(context.Background()); err != nil {
		t.Errorf("Check: %v", err)
	}
	b := ops(addP("d", "t", "p=1"), reg("d", "u"))
	if err := a.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, e := range logs.FilterMessage("dry run: would send").All() {
		stmts = append(stmts, e.ContextMap()["stmt"].(string))
	}
	want := []string{dbD, tableDT, "REFRESH TABLE `hive`.`d`.`u`"}
	if len(stmts) != len(want) {
		t.Fatalf("logged %q, want %q", stmts, want)
	}
	for i := range want {
		if stmts[i] != want[i] {
			t.Errorf("logged %q, want %q", stmts[i], want[i])
		}
	}
	if n := logs.FilterMessage("dry run: change").Len(); n != 2 {
		t.Errorf("logged %d descriptors at debug, want 2", n)
	}
	bad := ops(change.Descriptor{Op: change.AddPartitions, DB: "d", Table: "t"})
	checkClass(t, a.Apply(context.Background(), bad), ptr(Deterministic))
}
