package hms_test

import (
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

// The metastore's db uuid is read over Thrift; a replaced database (a reset
// log, served after the metastore restarted) has another one; a metastore that
// offers none reports ok=false rather than an error, so the sidecar falls back
// to event ids alone.
func TestMetastoreUUID(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	ctx := ctxT(t)
	u1, ok, err := c.MetastoreUUID(ctx)
	if err != nil || !ok || u1 != s.MetastoreUUID() || u1 == "" {
		t.Fatalf("MetastoreUUID = %q %v %v; want the server's %q", u1, ok, err, s.MetastoreUUID())
	}
	calls := s.Calls("get_metastore_db_uuid")
	if again, _, _ := c.MetastoreUUID(ctx); again != u1 || s.Calls("get_metastore_db_uuid") != calls {
		t.Fatalf("second read on the same connection = %q and %d calls; want the same uuid without asking again", again, s.Calls("get_metastore_db_uuid")-calls)
	}
	s.Reset(1)
	// The sidecar reads the current id first in every cycle: that call
	// finds the connection gone and reconnects.
	if _, err := c.CurrentEventID(ctx); err != nil {
		t.Fatal(err)
	}
	u2, ok, err := c.MetastoreUUID(ctx)
	if err != nil || !ok || u2 == u1 || u2 != s.MetastoreUUID() {
		t.Fatalf("after the database was replaced: %q %v %v; want the new uuid %q", u2, ok, err, s.MetastoreUUID())
	}
	s.SetMetastoreUUID("")
	s.DropConnections()
	if _, err := c.CurrentEventID(ctx); err != nil {
		t.Fatal(err)
	}
	if u, ok, err := c.MetastoreUUID(ctx); err != nil || ok || u != "" {
		t.Fatalf("a metastore without a uuid: %q %v %v; want no identity and no error", u, ok, err)
	}
}
