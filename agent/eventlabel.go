package agent

// eventTypeLabel is the value of the "type" label for an event of type t. The
// type comes from the metastore's wire, so it is untrusted: used as is, a type
// that is not valid UTF-8 makes the Prometheus client panic (and every master
// after a restart fetches the same event again), and arbitrary types would grow
// the series without bound. Only the types Hive writes are kept; anything else
// is "other".
func eventTypeLabel(t string) string {
	if knownEventTypes[t] {
		return t
	}
	return "other"
}

// knownEventTypes are the event types of Hive's notification log (Hive 3.1 to
// 4.x; reference §3), spelled as Hive writes them.
var knownEventTypes = map[string]bool{
	"CREATE_DATABASE": true, "DROP_DATABASE": true, "ALTER_DATABASE": true,
	"CREATE_TABLE": true, "DROP_TABLE": true, "ALTER_TABLE": true,
	"ADD_PARTITION": true, "DROP_PARTITION": true, "ALTER_PARTITION": true, "ALTER_PARTITIONS": true,
	"INSERT": true, "RELOAD": true,
	"CREATE_FUNCTION": true, "DROP_FUNCTION": true,
	"ADD_PRIMARYKEY": true, "ADD_FOREIGNKEY": true, "ADD_UNIQUECONSTRAINT": true,
	"ADD_NOTNULLCONSTRAINT": true, "ADD_DEFAULTCONSTRAINT": true, "ADD_CHECKCONSTRAINT": true,
	"DROP_CONSTRAINT": true,
	"CREATE_ISCHEMA":  true, "ALTER_ISCHEMA": true, "DROP_ISCHEMA": true,
	"ADD_SCHEMA_VERSION": true, "ALTER_SCHEMA_VERSION": true, "DROP_SCHEMA_VERSION": true,
	"CREATE_CATALOG": true, "ALTER_CATALOG": true, "DROP_CATALOG": true,
	"OPEN_TXN": true, "COMMIT_TXN": true, "ABORT_TXN": true,
	"ALLOC_WRITE_ID_EVENT": true, "ACID_WRITE_EVENT": true, "BATCH_ACID_WRITE_EVENT": true,
	"UPDATE_TBL_COL_STAT_EVENT": true, "UPDATE_PART_COL_STAT_EVENT": true,
	"UPDATE_PART_COL_STAT_EVENT_BATCH": true,
	"DELETE_TBL_COL_STAT_EVENT":        true, "DELETE_PART_COL_STAT_EVENT": true,
	"COMMIT_COMPACTION_EVENT": true,
	"CREATE_DATACONNECTOR":    true, "ALTER_DATACONNECTOR": true, "DROP_DATACONNECTOR": true,
}
