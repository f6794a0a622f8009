package agent

import (
	"context"
	"reflect"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// Only patterns that provably match the subjects of literally named, lower-case
// databases push down; anything else reads the whole log.
func TestPushdownDatabases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		include []string
		want    []string
	}{
		{nil, nil},
		{[]string{`sales\..*`}, []string{"sales"}},
		{[]string{`sales\..*`, `hr\.people`}, []string{"hr", "sales"}},
		{[]string{`(sales|hr)\..*`}, []string{"hr", "sales"}},
		{[]string{`sales\.orders|sales\.items`}, []string{"sales"}}, // factored by the parser
		{[]string{`sales\.`}, []string{"sales"}},                    // database-level changes only
		{[]string{`(?:sales)\.(a|b)`}, []string{"sales"}},
		{[]string{`sales.*`}, nil},                   // salesx.t too
		{[]string{`sales.orders`}, nil},              // unescaped dot: any character
		{[]string{`s[a]les\..*`}, []string{"sales"}}, // a one-character class is a literal
		{[]string{`s[ab]les\..*`}, nil},              // a class: not understood
		{[]string{`(?i)sales\..*`}, nil},             // case-folded: SALES too
		{[]string{`Sales\..*`}, nil},                 // Hive would match the lower-cased name only
		{[]string{`sales\..*`, `.*\.t`}, nil},        // one pattern of any database
		{[]string{`\..*`}, nil},                      // the empty database name
		{[]string{`sales`}, nil},                     // no '.': matches no subject, nothing to prove
		{[]string{`sales\..*|.*`}, nil},
		{[]string{`(?m)sales\..*`}, []string{"sales"}}, // the configuration's ^ is \A: (?m) inside changes nothing
	}
	for _, c := range cases {
		got := pushdownDatabases(anchored(c.include...))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("include %q: databases %q, want %q", c.include, got, c.want)
		}
	}
}

// databaseLog is a memLog that reads "the included databases" as a Hive 4
// metastore would for a catalog whose events are all of them: the whole log,
// telling how many databases it filtered to.
type databaseLog struct{ *memLog }

func (d databaseLog) NextEventsOfDatabases(ctx context.Context, after int64, max int, skip, dbs []string) (hms.Fetch, error) {
	f, err := d.NextEvents(ctx, after, max, skip)
	f.Databases = len(dbs)
	return f, err
}

// hmssync_catalog_pushdown_databases follows the role: the master's fetch
// sets it, and a demoted master, now a follower, shows 0 even before (or
// without: a cluster-scope dialect) its first follower fetch.
func TestPushdownGaugeFollowsTheRole(t *testing.T) {
	t.Parallel()
	log, store := &memLog{}, newMemStore()
	log.add(message.EventInsert, 5)
	r := newRig(t, log, store, rigOpts{scope: applier.ScopeCluster})
	r.l.cat.Source = databaseLog{log}
	r.l.pushDBs = []string{"db", "other"}
	gauge := func() float64 {
		var m dto.Metric
		if err := r.a.m.pushdownDBs.WithLabelValues("hive").Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetGauge().GetValue()
	}
	if got := gauge(); got != 0 {
		t.Fatalf("before any fetch: %v, want 0", got)
	}
	r.becomeMaster()
	r.run(10) // the initial refresh
	log.add(message.EventInsert, 3)
	r.run(10)
	if got := gauge(); got != 2 {
		t.Fatalf("master after a fetch: %v, want 2", got)
	}
	r.el.StepDown("test")
	if _, err := r.step(); err != nil {
		t.Fatal(err)
	}
	if got := gauge(); got != 0 {
		t.Errorf("demoted to follower: %v, want 0", got)
	}
}
