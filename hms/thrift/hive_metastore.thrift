// hmssync's own minimal Thrift IDL for the Hive Metastore: only the structs and
// methods hmssync calls, with the field ids, types and requiredness of Hive's
// hive_metastore.thrift and fb303.thrift, so that the generated code is
// wire-compatible with a real metastore. Regenerate with scripts/gen-thrift.sh;
// the generated package (hms/internal/gen/hmsthrift) is never edited by hand.

namespace go hmsthrift

// fb303: the base service every metastore extends. Service inheritance adds no
// name prefix on the wire, so the methods are called by their bare names.
enum fb_status {
  DEAD = 0,
  STARTING = 1,
  ALIVE = 2,
  STOPPING = 3,
  STOPPED = 4,
  WARNING = 5,
}

service FacebookService {
  string getVersion(),
  fb_status getStatus(),
}

exception MetaException {
  1: string message
}

exception NoSuchObjectException {
  1: string message
}

exception ConfigValSecurityException {
  1: string message
}

struct NotificationEventRequest {
  1: required i64 lastEvent,
  2: optional i32 maxEvents,
  3: optional list<string> eventTypeSkipList,
  4: optional string catName,
  5: optional string dbName,
  6: optional list<string> tableNames,
}

struct NotificationEvent {
  1: required i64 eventId,
  2: required i32 eventTime,
  3: required string eventType,
  4: optional string dbName,
  5: optional string tableName,
  6: required string message,
  7: optional string messageFormat,
  8: optional string catName,
}

struct NotificationEventResponse {
  1: required list<NotificationEvent> events,
}

struct CurrentNotificationEventId {
  1: required i64 eventId,
}

struct NotificationEventsCountRequest {
  1: required i64 fromEventId,
  2: required string dbName,
  3: optional string catName,
  4: optional i64 toEventId,
  5: optional i64 limit,
}

struct NotificationEventsCountResponse {
  1: required i64 eventsCount,
}

service ThriftHiveMetastore extends FacebookService {
  list<string> get_all_databases() throws (1: MetaException o1),
  list<string> get_all_tables(1: string db_name) throws (1: MetaException o1),
  list<string> get_partition_names(1: string db_name, 2: string tbl_name, 3: i16 max_parts = -1)
    throws (1: NoSuchObjectException o1, 2: MetaException o2),
  list<string> set_ugi(1: string user_name, 2: list<string> group_names) throws (1: MetaException o1),
  NotificationEventResponse get_next_notification(1: NotificationEventRequest rqst),
  CurrentNotificationEventId get_current_notificationEventId(),
  string get_metastore_db_uuid() throws (1: MetaException o1),
  NotificationEventsCountResponse get_notification_events_count(1: NotificationEventsCountRequest rqst),
  string get_config_value(1: string name, 2: string defaultValue) throws (1: ConfigValSecurityException o1),
}
