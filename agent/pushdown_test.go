package agent

import (
	"reflect"
	"testing"
)

// Only patterns that provably match the subjects of literally named, lower-case
// databases push down; anything else reads the whole log.
func TestPushdownDatabases(t *testing.T) {
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
