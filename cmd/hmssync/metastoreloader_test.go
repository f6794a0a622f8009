package main

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
)

func TestMetastoreLoaderReadsTheMetastore(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	for _, err := range []error{
		s.CreateDatabase("sales"),
		s.CreateDatabase("empty"),
		s.CreateTable(hmstest.Table{DB: "sales", Name: "orders", PartitionKeys: []string{"ds", "region"}}),
		s.CreateTable(hmstest.Table{DB: "sales", Name: "customers"}),
		s.CreateTable(hmstest.Table{DB: "sales", Name: "recent", ViewText: "select 1"}),
		s.AddPartitions("sales", "orders", []string{"2024-01-02", "eu"}, []string{"2024-01-01", "us"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	cli, err := hms.NewClient(hms.ClientConfig{URIs: []string{s.URI()}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	got, err := metastoreLoader(cli)(ctx, "hive")
	if err != nil {
		t.Fatal(err)
	}
	want := fetest.Truth{
		"empty": {},
		"sales": {
			"customers": {},
			"orders":    {"ds=2024-01-01/region=us", "ds=2024-01-02/region=eu"},
			"recent":    {},
		},
	}
	if !reflect.DeepEqual(normalise(got), normalise(want)) {
		t.Errorf("loaded %v\nwant   %v", got, want)
	}
}

func TestMetastoreLoaderReportsAnUnreachableMetastore(t *testing.T) {
	s := hmstest.NewServer()
	uri := s.URI()
	s.Close()
	cli, err := hms.NewClient(hms.ClientConfig{URIs: []string{uri}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := metastoreLoader(cli)(ctx, "hive"); err == nil {
		t.Fatalf("loaded %v from a closed metastore; want an error", got)
	}
}

// normalise makes nil and empty partition lists equal.
func normalise(t fetest.Truth) fetest.Truth {
	out := fetest.Truth{}
	for db, tables := range t {
		out[db] = map[string][]string{}
		for tn, parts := range tables {
			out[db][tn] = append([]string{}, parts...)
		}
	}
	return out
}
