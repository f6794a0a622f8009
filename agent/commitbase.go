package agent

import (
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
)

// commitBase is the committed master cursor as this master last read or wrote
// it: the base of its next fenced compare-and-set (cursorstore's revisions), and
// the term it was read in. It is valid only between a successful read or commit
// and the next failure; a master never writes on a base it does not know.
type commitBase struct {
	seen  cursorstore.Cursor
	valid bool
	term  election.Token
}

// beginCycle starts a master cycle in term: a base read in another term is
// forgotten (what the cursor holds at the start of a term is where the previous
// master left it). It reports whether the base is of this term.
func (b *commitBase) beginCycle(term election.Token) (sameTerm bool) {
	if b.term == term {
		return true
	}
	b.valid = false
	return false
}

// read takes the committed cursor c, just read in term, as the base, and
// returns the one it replaces.
func (b *commitBase) read(c cursorstore.Cursor, term election.Token) (prev cursorstore.Cursor) {
	prev = b.seen
	b.seen, b.valid, b.term = c, true, term
	return prev
}

// committed takes the cursor a fenced write of this master just wrote.
func (b *commitBase) committed(c cursorstore.Cursor) { b.seen = c }

// lost forgets the base after a failed write: it is read again before the next.
func (b *commitBase) lost() { b.valid = false }

// known says whether a write may be based on the base.
func (b *commitBase) known() bool { return b.valid }

// cursor is the base as last read or written (meaningful only while known).
func (b *commitBase) cursor() cursorstore.Cursor { return b.seen }

// writtenSince says whether m, the committed cursor as the watch shows it, was
// written after the base: by someone else than this master, whose own commits
// come back with the revision the base already holds.
func (b *commitBase) writtenSince(m cursorstore.Cursor) bool {
	return b.valid && m.Rev > b.seen.Rev
}
