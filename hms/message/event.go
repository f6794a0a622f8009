// Package message decodes the events of a Hive Metastore's notification log into
// the change descriptors of package change. Decoding uses only the event's
// message: it never calls the metastore, and the package imports nothing of
// Thrift or of the network (TestImportsNoNetworkPackage checks it), so what the
// fuzzers and the decode benchmarks exercise is the decoder alone. Package hms
// reads the events off the wire and converts them to Event.
package message

// Event is one HMS NotificationEvent. Its JSON form is the NotificationEvent
// JSON-lines format that `hmssync events decode` reads and the fake metastore's
// control API accepts.
type Event struct {
	ID      int64  `json:"eventId"`
	Time    int32  `json:"eventTime"`
	Type    string `json:"eventType"`
	DB      string `json:"dbName,omitempty"`
	Table   string `json:"tableName,omitempty"`
	Message string `json:"message"`
	Format  string `json:"messageFormat,omitempty"`
	Catalog string `json:"catName,omitempty"`
}
