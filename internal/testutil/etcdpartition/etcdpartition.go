// Package etcdpartition cuts a client off from etcd in tests: a TCP proxy between
// one client and the server whose traffic can be paused in both directions, so the
// client sees a silent, unreachable etcd (the server keeps running and the other
// clients keep working). Pausing rather than blackholing keeps gRPC streams intact,
// as after a real network partition heals.
package etcdpartition

import (
	"net"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/pkg/v3/proxy"
	"go.uber.org/zap"
)

// Link is a pausable connection to one etcd endpoint.
type Link struct {
	proxy proxy.Server
	// Endpoint is the proxy's client URL.
	Endpoint string
}

// New starts a proxy to target (an etcd client URL such as http://127.0.0.1:2379).
// It is closed when the test ends, after the clients made by Client.
func New(t testing.TB, target string) *Link {
	t.Helper()
	host := hostOf(t, target)
	// The proxy listens on the port it is given; find a free one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := proxy.NewServer(proxy.ServerConfig{
		Logger: zap.NewNop(),
		From:   url.URL{Scheme: "tcp", Host: addr},
		To:     url.URL{Scheme: "tcp", Host: host},
	})
	select {
	case <-p.Ready():
	case err := <-p.Error():
		t.Fatalf("start proxy to %s: %v", target, err)
	}
	t.Cleanup(func() { p.Close() })
	return &Link{proxy: p, Endpoint: "http://" + addr}
}

// Client opens a client that reaches etcd only through the link; it is closed
// when the test ends, before the proxy (the proxy's Close waits for its
// connections).
func (l *Link) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{l.Endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("client through proxy %s: %v", l.Endpoint, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Cut stops all traffic in both directions; requests time out.
func (l *Link) Cut() {
	l.proxy.PauseTx()
	l.proxy.PauseRx()
}

// Heal lets the held traffic through again.
func (l *Link) Heal() {
	l.proxy.UnpauseTx()
	l.proxy.UnpauseRx()
}

// hostOf is target's host:port.
func hostOf(t testing.TB, target string) string {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatalf("endpoint %q: %v", target, err)
	}
	return to.Host
}
