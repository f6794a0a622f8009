package sidecar

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDialEtcdValidates(t *testing.T) {
	ok := EtcdClientConfig{Endpoints: []string{"http://127.0.0.1:2379"}, DialTimeout: time.Second, RequestTimeout: time.Second}
	cases := map[string]func(*EtcdClientConfig){
		"no endpoints":        func(c *EtcdClientConfig) { c.Endpoints = nil },
		"bad scheme":          func(c *EtcdClientConfig) { c.Endpoints = []string{"ftp://x:1"} },
		"path in host:port":   func(c *EtcdClientConfig) { c.Endpoints = []string{"x:1/a"} },
		"user no password":    func(c *EtcdClientConfig) { c.Username = "u" },
		"password no user":    func(c *EtcdClientConfig) { c.Password = "p" },
		"cert without key":    func(c *EtcdClientConfig) { c.CertFile = "c.pem" },
		"missing CA file":     func(c *EtcdClientConfig) { c.CAFile = filepath.Join(t.TempDir(), "none.pem") },
		"zero dial timeout":   func(c *EtcdClientConfig) { c.DialTimeout = 0 },
		"zero request timout": func(c *EtcdClientConfig) { c.RequestTimeout = 0 },
	}
	for name, mutate := range cases {
		cfg := ok
		mutate(&cfg)
		if cli, err := DialEtcd(context.Background(), cfg); err == nil {
			cli.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDialEtcdProbesAnUnreachableEtcd(t *testing.T) {
	// Port 1 on loopback: nothing listens there.
	start := time.Now()
	_, err := DialEtcd(context.Background(), EtcdClientConfig{
		Endpoints: []string{"127.0.0.1:1"}, DialTimeout: 500 * time.Millisecond, RequestTimeout: time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("unreachable etcd: %v; want an error naming the endpoint", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the probe took %s; it is bounded by the dial timeout", d)
	}
}
