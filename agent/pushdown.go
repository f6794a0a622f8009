package agent

import (
	"regexp"
	"regexp/syntax"
	"slices"

	"github.com/hmssync/hmssync/hms"
)

// pushdownDatabases returns the databases a catalog's include patterns confine
// it to, when that can be proved, so that the master asks the metastore for the
// events of these databases only (hms.Client.NextEventsOfDatabases); nil when
// it cannot: no include, or a pattern that may match a subject ("db.table",
// "db.") of a database it does not name literally. Conservative: anything not
// understood gives nil, which costs bytes, never events. Exclude patterns only
// narrow what include lets through and play no part.
func pushdownDatabases(include []*regexp.Regexp) []string {
	if len(include) == 0 {
		return nil
	}
	var dbs []string
	for _, re := range include {
		got, ok := literalDatabases(re.String())
		if !ok {
			return nil
		}
		for _, db := range got {
			if !hms.PushdownDatabase(db) {
				return nil
			}
			if !slices.Contains(dbs, db) {
				dbs = append(dbs, db)
			}
		}
	}
	slices.Sort(dbs)
	return dbs
}

// literalDatabases returns every database whose subjects the pattern can match:
// the pattern must be anchored at the start of the text and spell, on every
// path, literal characters (not case-folded) up to a '.'; what follows the
// '.' does not matter.
func literalDatabases(pattern string) ([]string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	re = re.Simplify()
	// The match must start at the start of the subject: the pattern begins
	// with \A (^ without (?m)).
	p := prefixWalk{partial: []string{""}}
	if !p.anchored(re) {
		return nil, false
	}
	if !p.walk(re) || len(p.partial) > 0 {
		return nil, false
	}
	return p.done, true
}

// prefixWalk follows a pattern from its start: partial are the literal texts
// read so far on each path that has not reached a '.', done the database names
// of the paths that have.
type prefixWalk struct {
	partial []string
	done    []string
}

// anchored reports whether the first thing re requires is \A.
func (p *prefixWalk) anchored(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText:
		return true
	case syntax.OpConcat:
		return len(re.Sub) > 0 && p.anchored(re.Sub[0])
	case syntax.OpCapture:
		return p.anchored(re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !p.anchored(s) {
				return false
			}
		}
		return true
	}
	return false
}

// walk reads re on every partial path; false when it meets anything but
// literals, concatenations, alternations, groups and \A before a '.'.
func (p *prefixWalk) walk(re *syntax.Regexp) bool {
	if len(p.partial) == 0 {
		return true // every path has its database
	}
	switch re.Op {
	case syntax.OpBeginText, syntax.OpEmptyMatch:
		return true
	case syntax.OpCapture:
		return p.walk(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !p.walk(s) {
				return false
			}
		}
		return true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return false
		}
		var next []string
		for _, prefix := range p.partial {
			text := prefix + string(re.Rune)
			if i := indexDot(text); i >= 0 {
				if !slices.Contains(p.done, text[:i]) {
					p.done = append(p.done, text[:i])
				}
				continue
			}
			next = append(next, text)
		}
		p.partial = next
		return true
	case syntax.OpAlternate:
		start := p.partial
		var next []string
		for _, s := range re.Sub {
			p.partial = slices.Clone(start)
			if !p.walk(s) {
				return false
			}
			next = append(next, p.partial...)
		}
		p.partial = next
		return true
	}
	return false
}

func indexDot(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}
