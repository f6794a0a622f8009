package agent

import "github.com/hmssync/hmssync/hms/message"

// eventTypeLabel is the value of the "type" label for an event of type t. The
// type comes from the metastore's wire, so it is untrusted: used as is, a type
// that is not valid UTF-8 makes the Prometheus client panic (and every master
// after a restart fetches the same event again), and arbitrary types would grow
// the series without bound. Only the types Hive writes (message.EventTypes) are
// kept; anything else is "other".
func eventTypeLabel(t string) string {
	if message.KnownEventType(t) {
		return t
	}
	return "other"
}
