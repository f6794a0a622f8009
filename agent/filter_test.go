package agent

import (
	"regexp"
	"testing"

	"github.com/hmssync/hmssync/change"
)

func anchored(ps ...string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range ps {
		out = append(out, regexp.MustCompile(`^(?:`+p+`)$`))
	}
	return out
}

func TestFilterIncludeExclude(t *testing.T) {
	t.Parallel()
	l := &catalogLoop{cat: Catalog{Include: anchored(`sales\..*`, `hr\.people`), Exclude: anchored(`sales\.tmp_.*`)}}
	cases := []struct {
		d    change.Descriptor
		keep bool
	}{
		{change.Descriptor{Op: change.RefreshTable, DB: "sales", Table: "orders"}, true},
		{change.Descriptor{Op: change.RefreshTable, DB: "sales", Table: "tmp_x"}, false},   // excluded
		{change.Descriptor{Op: change.RefreshTable, DB: "hr", Table: "people"}, true},      // exact include
		{change.Descriptor{Op: change.RefreshTable, DB: "hr", Table: "salaries"}, false},   // not included
		{change.Descriptor{Op: change.RefreshTable, DB: "xsales", Table: "orders"}, false}, // anchored
		{change.Descriptor{Op: change.RegisterDatabase, DB: "sales"}, true},                // "sales." matches sales\..*
		{change.Descriptor{Op: change.RegisterDatabase, DB: "hr"}, false},                  // "hr." does not match hr\.people
		// A rename out of scope is kept (the old table must go), into scope too.
		{change.Descriptor{Op: change.RenameTable, DB: "sales", Table: "orders", DBAfter: "archive", TableAfter: "orders"}, true},
		{change.Descriptor{Op: change.RenameTable, DB: "archive", Table: "o", DBAfter: "sales", TableAfter: "o"}, true},
		{change.Descriptor{Op: change.RenameTable, DB: "archive", Table: "o", DBAfter: "archive", TableAfter: "p"}, false},
	}
	for _, c := range cases {
		if got := l.keep(c.d); got != c.keep {
			t.Errorf("keep(%s %s.%s → %s.%s) = %v, want %v", c.d.Op, c.d.DB, c.d.Table, c.d.DBAfter, c.d.TableAfter, got, c.keep)
		}
	}
}

func TestFilterEmptyKeepsEverything(t *testing.T) {
	t.Parallel()
	l := &catalogLoop{}
	if !l.keep(change.Descriptor{Op: change.DropPartitions, DB: "a", Table: "b"}) {
		t.Error("no patterns: a change was dropped")
	}
}
