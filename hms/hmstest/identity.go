package hmstest

import (
	"crypto/rand"
	"encoding/hex"
)

// The metastore's identity and the server's handling of the skip list, the two
// traits of a metastore's version that decide how a consumer tells a log reset
// and what it reads.

// newUUID is a fresh metastore db uuid.
func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// MetastoreUUID is what get_metastore_db_uuid answers; "" when the server
// offers none (it then answers with a MetaException, as a database without a
// uuid does).
func (s *Server) MetastoreUUID() string {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.uuid
}

// SetMetastoreUUID sets the db uuid; "" makes the server offer none. Reset gives
// the log a fresh uuid when it has one.
func (s *Server) SetMetastoreUUID(uuid string) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.uuid = uuid
}

// IgnoreSkipList makes the server return events of every type whatever the
// request's skip list says, as servers older than Hive 3 do (they do not know
// the field); the client then filters.
func (s *Server) IgnoreSkipList(on bool) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.ignoreSkip = on
}

// IgnoreRequestFilters makes get_next_notification ignore the request's
// catName, dbName and tableNames, as servers older than Hive 4 do (Thrift
// skips fields it does not know).
func (s *Server) IgnoreRequestFilters(on bool) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.ignoreFilters = on
}

// SetMaxEventResponse caps the events one get_next_notification answer
// carries (0: no cap), as Hive's hive.metastore.max.event.response does
// (default 1,000,000): a request for more gets n, however many follow.
func (s *Server) SetMaxEventResponse(n int) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.maxResponse = n
}

func (s *Server) ignoresSkipList() bool {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.ignoreSkip
}
