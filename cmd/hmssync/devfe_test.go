package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/hmssync/hmssync/applier/fetest"
)

func TestFEAddrs(t *testing.T) {
	got, err := feAddrs([]string{"127.0.0.1:8030"}, 3)
	want := []string{"127.0.0.1:8030", "127.0.0.1:8031", "127.0.0.1:8032"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("--fes 3: got %v, %v; want %v", got, err, want)
	}
	got, err = feAddrs([]string{"a:1,b:2", "c:3"}, 1)
	want = []string{"a:1", "b:2", "c:3"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("lists: got %v, %v; want %v", got, err, want)
	}
	for _, bad := range []struct {
		listen []string
		n      int
	}{{nil, 1}, {[]string{"a:1", "b:2"}, 2}, {[]string{"a:0"}, 2}, {[]string{"a"}, 2}, {[]string{"a:65535"}, 2}, {[]string{"a:1"}, 0}} {
		if got, err := feAddrs(bad.listen, bad.n); err == nil {
			t.Errorf("%v --fes %d: want an error, got %v", bad.listen, bad.n, got)
		}
	}
}

func TestTruthLoader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/truth/hive" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"d":{"t":["p=1"],"u":[]}}`))
	}))
	defer srv.Close()
	load := truthLoader(srv.URL + "/truth/{catalog}")
	got, err := load(context.Background(), "hive")
	if err != nil {
		t.Fatal(err)
	}
	if d := fetest.Diff(fetest.Truth{"d": {"t": {"p=1"}, "u": nil}}, got); d != "" {
		t.Errorf("truth: %s", d)
	}
	if _, err := load(context.Background(), "other"); !errors.Is(err, fetest.ErrUnknownCatalog) {
		t.Errorf("404 should mean an unknown catalog, got %v", err)
	}
}
