package fetest

import (
	"fmt"

	"github.com/hmssync/hmssync/change"
)

// Cluster is n FE endpoints sharing one cache model, like a Doris cluster where a
// REFRESH sent to any FE is replayed on every FE. Each endpoint has its own
// faults, listener and overlap count.
type Cluster struct {
	servers []*Server
	m       *model
}

// NewCluster starts n endpoints on 127.0.0.1:0. It panics if it cannot listen.
func NewCluster(n int, o Options) *Cluster {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = "127.0.0.1:0"
	}
	c, err := ListenCluster(addrs, o)
	if err != nil {
		panic(fmt.Sprintf("fetest: %v", err))
	}
	return c
}

// ListenCluster starts one endpoint per address, all sharing one model.
func ListenCluster(addrs []string, o Options) (*Cluster, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("fetest: a cluster needs at least one address")
	}
	c := &Cluster{m: newModel(o.Loader)}
	for _, a := range addrs {
		s, err := listen(a, o, c.m)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.servers = append(c.servers, s)
	}
	return c, nil
}

// URLs lists the endpoints' URLs.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.URL
	}
	return out
}

// Server returns endpoint i (for Down, Up, faults and overlap counts).
func (c *Cluster) Server(i int) *Server { return c.servers[i] }

// Servers returns every endpoint.
func (c *Cluster) Servers() []*Server { return append([]*Server(nil), c.servers...) }

// Close stops every endpoint.
func (c *Cluster) Close() {
	for _, s := range c.servers {
		s.Close()
	}
}

// Snapshot returns what the shared cache of catalog holds.
func (c *Cluster) Snapshot(catalog string) Truth { return c.m.snapshot(catalog) }

// AppliedEventID is the last native to_event_id applied for catalog (-1: none).
func (c *Cluster) AppliedEventID(catalog string) int64 { return c.m.appliedEventID(catalog) }

// Statements returns every statement any endpoint received, in order.
func (c *Cluster) Statements() []string { return c.servers[0].Statements() }

// Changes returns every native batch any endpoint received, in order.
func (c *Cluster) Changes() []change.Batch { return c.servers[0].Changes() }

// Overlaps sums the endpoints' overlap counts.
func (c *Cluster) Overlaps() int {
	n := 0
	for _, s := range c.servers {
		n += s.Overlaps()
	}
	return n
}
