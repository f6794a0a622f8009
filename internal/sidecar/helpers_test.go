package sidecar_test

import (
	"net"
	"testing"

	"go.uber.org/goleak"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// leakIgnores are goroutines of libraries that outlive their clients by design.
var leakIgnores = []goleak.Option{
	goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
}
