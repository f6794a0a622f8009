// Package eventlines is the metastore's notification log as JSON lines, for
// people and scripts: Decode turns NotificationEvent lines (hms.Event's JSON
// form) into change descriptor lines, and Tail follows a live metastore's log,
// optionally with each event's descriptors. They are `hmssync events decode`
// and `hmssync events tail`; the decoding is the sidecar's own (hms.Decoder).
package eventlines
