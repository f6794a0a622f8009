package message

import "slices"

// Event types whose messages Decode reads (reference §5); every other type
// yields no descriptor (the transaction events are in txn.go).
const (
	EventCreateDatabase  = "CREATE_DATABASE"
	EventDropDatabase    = "DROP_DATABASE"
	EventAlterDatabase   = "ALTER_DATABASE"
	EventCreateTable     = "CREATE_TABLE"
	EventDropTable       = "DROP_TABLE"
	EventAlterTable      = "ALTER_TABLE"
	EventAddPartition    = "ADD_PARTITION"
	EventDropPartition   = "DROP_PARTITION"
	EventAlterPartition  = "ALTER_PARTITION"
	EventAlterPartitions = "ALTER_PARTITIONS"
	EventInsert          = "INSERT"
	EventReload          = "RELOAD"
)

// eventTypes are the event types of Hive's notification log (Hive 3.1 to 4.x;
// reference §3), spelled as Hive writes them: the decoded ones, then the others.
var eventTypes = []string{
	EventCreateDatabase, EventDropDatabase, EventAlterDatabase,
	EventCreateTable, EventDropTable, EventAlterTable,
	EventAddPartition, EventDropPartition, EventAlterPartition, EventAlterPartitions,
	EventInsert, EventReload,
	EventOpenTxn, EventCommitTxn, EventAbortTxn, EventAllocWriteID, EventCommitCompaction,
	"ACID_WRITE_EVENT", "BATCH_ACID_WRITE_EVENT",
	"UPDATE_TBL_COL_STAT_EVENT", "UPDATE_PART_COL_STAT_EVENT", "UPDATE_PART_COL_STAT_EVENT_BATCH",
	"DELETE_TBL_COL_STAT_EVENT", "DELETE_PART_COL_STAT_EVENT",
	"CREATE_FUNCTION", "DROP_FUNCTION",
	"ADD_PRIMARYKEY", "ADD_FOREIGNKEY", "ADD_UNIQUECONSTRAINT", "ADD_NOTNULLCONSTRAINT",
	"ADD_DEFAULTCONSTRAINT", "ADD_CHECKCONSTRAINT", "DROP_CONSTRAINT",
	"CREATE_ISCHEMA", "ALTER_ISCHEMA", "DROP_ISCHEMA", "ADD_SCHEMA_VERSION", "ALTER_SCHEMA_VERSION", "DROP_SCHEMA_VERSION",
	"CREATE_CATALOG", "ALTER_CATALOG", "DROP_CATALOG",
	"CREATE_DATACONNECTOR", "ALTER_DATACONNECTOR", "DROP_DATACONNECTOR",
}

// knownEventTypes is eventTypes as a set, for KnownEventType.
var knownEventTypes = func() map[string]bool {
	m := make(map[string]bool, len(eventTypes))
	for _, t := range eventTypes {
		m[t] = true
	}
	return m
}()

// EventTypes returns the event types of Hive's notification log (Hive 3.1 to
// 4.x; reference §3), spelled as Hive writes them, each once. A newer Hive may
// write others. The slice is the caller's.
func EventTypes() []string { return slices.Clone(eventTypes) }

// KnownEventType reports whether t is one of EventTypes.
func KnownEventType(t string) bool { return knownEventTypes[t] }
