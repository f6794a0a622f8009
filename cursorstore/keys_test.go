package cursorstore_test

import (
	"testing"

	"github.com/hmssync/hmssync/cursorstore"
)

func TestClusterPrefixAndNames(t *testing.T) {
	good := map[[2]string]string{
		{"", "prod"}:          "/hmssync/prod",
		{"/hmssync", "prod"}:  "/hmssync/prod",
		{"/hmssync/", "prod"}: "/hmssync/prod",
		{"/a/b", "doris-1"}:   "/a/b/doris-1",
	}
	for in, want := range good {
		got, err := cursorstore.ClusterPrefix(in[0], in[1])
		if err != nil || got != want {
			t.Errorf("ClusterPrefix(%q, %q) = %q, %v; want %q", in[0], in[1], got, err, want)
		}
	}
	for _, in := range [][2]string{{"hmssync", "prod"}, {"/hmssync", ""}, {"/hmssync", "a/b"}, {"/hmssync", "a b"}, {"/hmssync", "a\x00"}} {
		if got, err := cursorstore.ClusterPrefix(in[0], in[1]); err == nil {
			t.Errorf("ClusterPrefix(%q, %q) = %q; want an error", in[0], in[1], got)
		}
	}
	s := cursorstore.New(nil, "/hmssync", "a/b", 0, nil)
	if s.Err() == nil {
		t.Fatal("New accepted cluster a/b")
	}
}

// The store checks names by the configuration's rules (internal/names), so a
// name that the configuration refuses is refused here too, and the reverse.
func TestStoreNamesFollowTheConfigurationRules(t *testing.T) {
	for _, bad := range []string{"-lead", "a*b", "é", "a:b", string(make([]byte, 129))} {
		if err := cursorstore.ValidateName("catalog", bad); err == nil {
			t.Errorf("ValidateName(catalog, %q) accepted a name the configuration refuses", bad)
		}
	}
	for _, good := range []string{"hive", "doris-fe-0", "fe_1.prod", "Hive"} {
		if err := cursorstore.ValidateName("member", good); err != nil {
			t.Errorf("ValidateName(member, %q): %v", good, err)
		}
	}
	if _, err := cursorstore.ClusterPrefix("/hms sync", "prod"); err == nil {
		t.Error("ClusterPrefix accepted a prefix with a space")
	}
}

func TestKeyLayoutIsSpec4(t *testing.T) {
	s := cursorstore.New(nil, "", "prod", 0, nil)
	for got, want := range map[string]string{
		s.ElectionPrefix():               "/hmssync/prod/election",
		s.MasterCursorKey("hive"):        "/hmssync/prod/catalogs/hive/cursor",
		s.MemberCursorKey("fe1", "hive"): "/hmssync/prod/members/fe1/cursors/hive",
		s.StatusKey("fe1"):               "/hmssync/prod/members/fe1/status",
		s.PauseKey():                     "/hmssync/prod/pause",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}
