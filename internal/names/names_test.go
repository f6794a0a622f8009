package names

import "testing"

func TestNames(t *testing.T) {
	for _, c := range []struct {
		check func(string) error
		name  string
		ok    bool
	}{
		{Cluster, "doris-prod", true},
		{Cluster, "a.b_c-1", true},
		{Cluster, "", false},
		{Cluster, "-x", false},
		{Cluster, "a/b", false},
		{Cluster, "a b", false},
		{Member, "doris-fe-0", true},
		{Member, "fe\n0", false},
		{Member, string(make([]byte, 129)), false},
		{Catalog, "hive", true},
		{Catalog, "hive\xff", false},
		{Prefix, "/hmssync", true},
		{Prefix, "/a/b.c", true},
		{Prefix, "hmssync", false},
		{Prefix, "/hmssync/", false},
		{Prefix, "/a//b", false},
		{Prefix, "/hms sync", false},
		{Prefix, "/hms\nsync", false},
		{Prefix, "/", false},
	} {
		if err := c.check(c.name); (err == nil) != c.ok {
			t.Errorf("%q: %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if !SameCatalog("Hive", "hive") || SameCatalog("hive", "hive2") {
		t.Error("SameCatalog must ignore case and only case")
	}
}
