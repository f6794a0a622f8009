package hms_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

func TestTablesListsTablesAndViews(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	must(t, s.CreateDatabase("sales"))
	must(t, s.CreateDatabase("empty"))
	must(t, s.CreateTable(hmstest.Table{DB: "sales", Name: "orders", PartitionKeys: []string{"ds"}}))
	must(t, s.CreateTable(hmstest.Table{DB: "sales", Name: "customers"}))
	must(t, s.CreateTable(hmstest.Table{DB: "sales", Name: "recent", ViewText: "select * from orders"}))
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})

	got, err := c.Tables(ctxT(t), "sales")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"customers", "orders", "recent"}; !slices.Equal(got, want) {
		t.Errorf("Tables(sales) = %q, want %q", got, want)
	}
	for _, db := range []string{"empty", "missing"} {
		got, err := c.Tables(ctxT(t), db)
		if err != nil || len(got) != 0 {
			t.Errorf("Tables(%s) = %q, %v; want none and no error (as Hive answers)", db, got, err)
		}
	}
}

func TestPartitionNames(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	must(t, s.CreateDatabase("sales"))
	must(t, s.CreateTable(hmstest.Table{DB: "sales", Name: "orders", PartitionKeys: []string{"ds", "region"}}))
	must(t, s.CreateTable(hmstest.Table{DB: "sales", Name: "customers"}))
	must(t, s.AddPartitions("sales", "orders", []string{"2024-01-02", "eu"}, []string{"2024-01-01", "a/b=c"}))
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})

	got, err := c.PartitionNames(ctxT(t), "sales", "orders")
	if err != nil {
		t.Fatal(err)
	}
	// Hive's partition names escape '/' and '=' in values (%2F, %3D).
	want := []string{"ds=2024-01-01/region=a%2Fb%3Dc", "ds=2024-01-02/region=eu"}
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Errorf("PartitionNames(sales.orders) = %q, want %q", got, want)
	}
	if got, err := c.PartitionNames(ctxT(t), "sales", "customers"); err != nil || len(got) != 0 {
		t.Errorf("PartitionNames of an unpartitioned table = %q, %v; want none", got, err)
	}
}

func TestPartitionNamesOfMissingTable(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	must(t, s.CreateDatabase("sales"))
	c := newClient(t, hms.ClientConfig{URIs: []string{s.URI()}})
	if _, err := c.Databases(ctxT(t)); err != nil { // the connection has served a call
		t.Fatal(err)
	}

	_, err := c.PartitionNames(ctxT(t), "sales", "gone")
	if !errors.Is(err, hms.ErrNoSuchObject) {
		t.Fatalf("PartitionNames of a missing table: %v; want ErrNoSuchObject", err)
	}
	// NoSuchObjectException is the metastore's answer, not a broken connection:
	// the call is not retried on a new connection.
	if n := s.Calls("get_partition_names"); n != 1 {
		t.Errorf("get_partition_names called %d times, want 1", n)
	}
}
