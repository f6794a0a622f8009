package agent

import (
	"context"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
)

// The driver depends on its collaborators through these small interfaces, declared
// here by the consumer, so that each one names exactly what the driver uses. The
// production implementations are *hms.Client, hms.Decoder, applier.Applier,
// *election.Elector and *cursorstore.Store.

// EventSource reads one metastore's notification log.
type EventSource interface {
	CurrentEventID(ctx context.Context) (int64, error)
	NextEvents(ctx context.Context, after int64, max int, skipTypes []string) (hms.Fetch, error)
}

// EventDecoder turns one notification event into change descriptors.
type EventDecoder interface {
	Decode(hms.Event) ([]change.Descriptor, error)
}

// Elector holds this member's candidacy for the master role. Cancelling Run's
// context leaves the election, resigning a master.
type Elector interface {
	Run(ctx context.Context) error
	Current() (election.Term, bool)
	Changed() <-chan struct{}
	Leader() string
	StepDown(reason string)
}

// CursorStore is the etcd side of the cursors and the pause key.
type CursorStore interface {
	MasterCursor(ctx context.Context, catalog string) (cursorstore.Cursor, error)
	CommitMaster(ctx context.Context, catalog string, tok election.Token, lastSeen cursorstore.Cursor, value int64) (cursorstore.Cursor, error)
	// RewindMaster is the fenced commit that may lower the cursor: only for a
	// metastore whose notification log was reset.
	RewindMaster(ctx context.Context, catalog string, tok election.Token, lastSeen cursorstore.Cursor, value int64) (cursorstore.Cursor, error)
	WatchMaster(ctx context.Context, catalog string) cursorstore.Watch[cursorstore.Cursor]
	MemberCursor(ctx context.Context, member, catalog string) (cursorstore.Cursor, error)
	PutMemberCursor(ctx context.Context, member, catalog string, value int64) error
	WatchPause(ctx context.Context) cursorstore.Watch[bool]
}

// StatusPublisher keeps the member's status key in etcd current (`hmssync status`
// reads it). Optional.
type StatusPublisher interface {
	Update(cursorstore.MemberStatus)
	Run(ctx context.Context) error
}

// Compile-time checks that the production types fit.
var (
	_ EventSource     = (*hms.Client)(nil)
	_ EventDecoder    = hms.Decoder{}
	_ Elector         = (*election.Elector)(nil)
	_ CursorStore     = (*cursorstore.Store)(nil)
	_ StatusPublisher = (*cursorstore.StatusPublisher)(nil)
)
