package agent

import (
	"context"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/election"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// The driver depends on its collaborators through these small interfaces, declared
// here by the consumer, so that each one names exactly what the driver uses. The
// production implementations are *hms.Client, message.Decoder, applier.Applier,
// *election.Elector, *cursorstore.Store and *cursorstore.StatusPublisher.
//
// Required: EventSource, EventDecoder, Elector, CursorStore (and Config's
// applier.Applier). Optional, found by a type assertion on the required value
// and each saying below what the driver does without it: DatabaseEventSource and
// MetastoreIdentifier (on the EventSource), PoisonAttributor and TxnDecoder (on
// the EventDecoder), AppliedReporter (on the Applier), WatchRestartCounter,
// MemberTxnsWriter and MemberWatcher (on the CursorStore), StatusPublisher (Config.Status) and
// StatusWriteObserver (on the StatusPublisher).

// EventSource reads one metastore's notification log.
type EventSource interface {
	CurrentEventID(ctx context.Context) (int64, error)
	NextEvents(ctx context.Context, after int64, max int, skipTypes []string) (hms.Fetch, error)
}

// DatabaseEventSource is implemented by event sources that can read the events
// of a few databases only (Hive 4's get_next_notification filters; *hms.Client):
// the master of a catalog whose include patterns name its databases literally
// reads through it (pushdownDatabases). The answer may still hold events of
// other databases; the catalog's filter drops them. Without it the master reads
// the whole log.
type DatabaseEventSource interface {
	NextEventsOfDatabases(ctx context.Context, after int64, max int, skipTypes, dbs []string) (hms.Fetch, error)
}

// MetastoreIdentifier is implemented by event sources that can name the
// metastore database they read (Hive 3.0+: get_metastore_db_uuid; *hms.Client).
// ok is false when the metastore offers no identity. Without it, or without an
// identity, the lineage is told by event ids alone (SPEC §2a).
type MetastoreIdentifier interface {
	MetastoreUUID(ctx context.Context) (uuid string, ok bool, err error)
}

// AppliedReporter is implemented by appliers whose FE can say which event it
// last applied for a catalog (the native protocol's state endpoint, the native
// applier; -1: none since it started). A member of a local-scope dialect
// compares it with its own cursor: an FE that restarted empty or was restored
// from an older state is brought back rather than sent the next batch as if
// nothing happened. Without it the member trusts its own cursor.
type AppliedReporter interface {
	AppliedEventID(ctx context.Context, catalog string) (int64, error)
}

// EventDecoder turns one notification event into change descriptors.
type EventDecoder interface {
	Decode(message.Event) ([]change.Descriptor, error)
}

// TxnDecoder is implemented by decoders that can read transaction events
// (message.Decoder): OPEN_TXN, ALLOC_WRITE_ID_EVENT, COMMIT_TXN, ABORT_TXN,
// which the catalog's open-transaction state turns into refreshes
// (txnstate.go). Without it those events give nothing, and writes to
// transactional tables reach no FE.
type TxnDecoder interface {
	DecodeTxn(message.Event) (message.Txn, error)
}

// PoisonAttributor is implemented by decoders that can name the objects an
// event they cannot decode concerns (message.Decoder): the step then heals just
// those (a table or database refresh) and applies the rest of the batch. Without
// it, or when it names none, an undecodable event heals the whole catalog.
type PoisonAttributor interface {
	Attribute(message.Event) []change.Object
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

// CursorStore is the etcd side of the cursors and the pause key. Optional on top:
// WatchRestartCounter, MemberWatcher.
type CursorStore interface {
	MasterCursor(ctx context.Context, catalog string) (cursorstore.Cursor, error)
	// CommitMaster continues the committed lineage (the base's epoch).
	CommitMaster(ctx context.Context, catalog string, c cursorstore.Commit) (cursorstore.Cursor, error)
	// RewindMaster is the fenced commit of a new lineage (epoch + 1), which may
	// lower the cursor: only for a metastore whose notification log was reset
	// or whose identity changed.
	RewindMaster(ctx context.Context, catalog string, c cursorstore.Commit) (cursorstore.Cursor, error)
	WatchMaster(ctx context.Context, catalog string) cursorstore.Watch[cursorstore.Cursor]
	MemberCursor(ctx context.Context, member, catalog string) (cursorstore.Cursor, error)
	PutMemberCursor(ctx context.Context, member, catalog string, value, epoch int64) error
	WatchPause(ctx context.Context) cursorstore.Watch[bool]
	// Paused reads the pause key from etcd: the master's check before a
	// cycle when the pause watch cannot be trusted (pauseKeyPresent).
	Paused(ctx context.Context) (bool, error)
}

// WatchRestartCounter is implemented by cursor stores that re-establish their
// own watches (*cursorstore.Store) and count it: the agent exports the count as
// hmssync_watch_restarts_total. Without it that metric is absent.
type WatchRestartCounter interface {
	WatchRestarts() int64
}

// MemberTxnsWriter is implemented by cursor stores that can write a member's
// open-transaction state with its cursor, in one transaction
// (*cursorstore.Store); txns "" leaves the state's key as it is. Without it the
// member's state is not saved, and after a restart its transactions' commits are
// unknown commits (a full refresh each).
type MemberTxnsWriter interface {
	PutMemberCursorTxns(ctx context.Context, member, catalog string, value, epoch int64, txns string) error
}

// MemberWatcher is implemented by cursor stores that can follow every member's
// durable cursor of a catalog and whether the member is live (its status key;
// *cursorstore.Store): /v1/wait's cluster scope with a local-scope dialect opens
// it while such a request waits, and only then. Without it that scope answers
// 503.
type MemberWatcher interface {
	WatchMembers(ctx context.Context, catalog string) cursorstore.Watch[map[string]cursorstore.MemberProgress]
}

// StatusPublisher keeps the member's status key in etcd current (`hmssync status`
// reads it; *cursorstore.StatusPublisher). Optional (Config.Status): without it
// the member publishes no status key, and /status still serves its own view.
type StatusPublisher interface {
	Update(cursorstore.MemberStatus)
	Run(ctx context.Context) error
}

// StatusWriteObserver is implemented by status publishers that report each
// write of the status key (*cursorstore.StatusPublisher): the agent counts them
// in hmssync_status_publishes_total. Without it the counter stays at zero.
type StatusWriteObserver interface {
	ObserveWrites(func(error))
}

// Compile-time checks that the production types fit.
var (
	_ EventSource         = (*hms.Client)(nil)
	_ DatabaseEventSource = (*hms.Client)(nil)
	_ MetastoreIdentifier = (*hms.Client)(nil)
	_ EventDecoder        = message.Decoder{}
	_ PoisonAttributor    = message.Decoder{}
	_ TxnDecoder          = message.Decoder{}
	_ MemberTxnsWriter    = (*cursorstore.Store)(nil)
	_ Elector             = (*election.Elector)(nil)
	_ CursorStore         = (*cursorstore.Store)(nil)
	_ WatchRestartCounter = (*cursorstore.Store)(nil)
	_ MemberWatcher       = (*cursorstore.Store)(nil)
	_ StatusPublisher     = (*cursorstore.StatusPublisher)(nil)
	_ StatusWriteObserver = (*cursorstore.StatusPublisher)(nil)
)
