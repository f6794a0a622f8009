// Package etcdtest gives a test its own real, embedded etcd server: a real server
// (never a mocked client) that starts in about half a second and needs nothing
// installed.
package etcdtest

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/internal/embedetcd"
)

// Server is a test's embedded etcd.
type Server struct {
	*embedetcd.Server
	// Client is a client for the test's own use; it is closed with the server.
	Client *clientv3.Client
}

// New starts an embedded etcd in a temporary directory. The server and its client
// are closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	srv, err := embedetcd.Start(context.Background(), embedetcd.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	cli, err := srv.Client()
	if err != nil {
		srv.Close()
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() {
		cli.Close()
		srv.Close()
	})
	return &Server{Server: srv, Client: cli}
}

// NewClient opens an additional client (one per simulated sidecar); it is closed
// when the test ends.
func (s *Server) NewClient(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := s.Server.Client()
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
