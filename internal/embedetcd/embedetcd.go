// Package embedetcd runs a single-node etcd inside the hmssync process. It serves
// `hmssync run --embedded-etcd DIR` (one sidecar without an etcd cluster), the demo,
// the benchmark and the tests, which must not depend on an external etcd.
package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Config says where the server keeps its data and where it listens.
type Config struct {
	// Dir holds the server's data; it survives restarts of the process.
	Dir string
	// ClientAddr is host:port for clients; "" means 127.0.0.1 on a free port.
	ClientAddr string
	// StartTimeout bounds how long Start waits for the server to become ready.
	StartTimeout time.Duration
	// Logger receives the server's own logs; nil discards them (an embedded
	// server's shutdown is noisy and says nothing an hmssync operator can act on).
	Logger *zap.Logger
}

// Server is a running embedded etcd.
type Server struct {
	etcd *embed.Etcd
}

// Start starts a single-node etcd and waits until it serves clients.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded etcd: no data directory given (etcd.embedded_dir)")
	}
	if cfg.ClientAddr == "" {
		cfg.ClientAddr = "127.0.0.1:0"
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	clientURL, err := url.Parse("http://" + cfg.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: client address %q: %w", cfg.ClientAddr, err)
	}
	// The peer port is never used by a single node but etcd insists on one.
	peerURL, _ := url.Parse("http://127.0.0.1:0")

	ec := embed.NewConfig()
	ec.Name = "hmssync"
	ec.Dir = cfg.Dir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	ec.LogLevel = "error"

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd in %s on %s: %w", cfg.Dir, cfg.ClientAddr, err)
	}
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return &Server{etcd: e}, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", cfg.Dir, err)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: not ready after %s", cfg.Dir, cfg.StartTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", cfg.Dir, ctx.Err())
	}
}

// Endpoints returns the client URLs, ready for clientv3.Config.Endpoints.
func (s *Server) Endpoints() []string {
	eps := make([]string, 0, len(s.etcd.Clients))
	for _, l := range s.etcd.Clients {
		eps = append(eps, "http://"+l.Addr().String())
	}
	return eps
}

// Client opens a client to the server. The caller closes it.
func (s *Server) Client() (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   s.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("client for embedded etcd %v: %w", s.Endpoints(), err)
	}
	return cli, nil
}

// Err reports a fatal server error after start; nil channel reads block forever.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops the server and waits for it to release its data directory.
func (s *Server) Close() {
	s.etcd.Close()
	<-s.etcd.Server.StopNotify()
}
