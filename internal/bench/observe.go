package bench

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/applier/fetest"
)

// cursorMove is a cursor observed at a value at a time.
type cursorMove struct {
	at    time.Time
	value int64
}

// cursorTrack is a cursor's observed history, in order; values never decrease
// in a bench run.
type cursorTrack []cursorMove

// latest is the last value seen, -2 when none was.
func (t cursorTrack) latest() int64 {
	if len(t) == 0 {
		return -2
	}
	return t[len(t)-1].value
}

// reached is when the cursor first was at least v; ok is false if it never was.
func (t cursorTrack) reached(v int64) (time.Time, bool) {
	i := sort.Search(len(t), func(i int) bool { return t[i].value >= v })
	if i == len(t) {
		return time.Time{}, false
	}
	return t[i].at, true
}

// etcdObserver watches one cluster's subtree in etcd and records every cursor
// move with the time the bench saw it, and counts the writes. All cursor times
// of a run come from this one watch, so a lag between two of them is not skewed
// by different clocks or paths.
type etcdObserver struct {
	root, catalog string

	mu      sync.Mutex
	master  cursorTrack
	members map[string]cursorTrack
	puts    map[string]int // by key kind
	revs    int            // distinct revisions seen (write transactions)
	lastRev int64
	err     error
	// elected is when the first election key was seen: a lone sidecar is
	// master from then on.
	elected time.Time
}

// Key kinds counted in etcdObserver.puts.
const (
	keyMasterCursor = "master_cursor"
	keyMemberCursor = "member_cursor"
	keyStatus       = "status"
	keyElection     = "election"
	keyOther        = "other"
)

// observeEtcd starts watching root from revision fromRev until ctx ends.
func observeEtcd(ctx context.Context, cli *clientv3.Client, root, catalog string, fromRev int64) *etcdObserver {
	o := &etcdObserver{root: root, catalog: catalog, members: map[string]cursorTrack{}, puts: map[string]int{}}
	wch := cli.Watch(clientv3.WithRequireLeader(ctx), root+"/", clientv3.WithPrefix(), clientv3.WithRev(fromRev))
	go func() {
		for resp := range wch {
			now := time.Now()
			if err := resp.Err(); err != nil {
				o.mu.Lock()
				o.err = err
				o.mu.Unlock()
				continue
			}
			o.mu.Lock()
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision != o.lastRev {
					o.revs++
					o.lastRev = ev.Kv.ModRevision
				}
				if ev.Type != clientv3.EventTypePut {
					continue
				}
				o.record(now, string(ev.Kv.Key), string(ev.Kv.Value))
			}
			o.mu.Unlock()
		}
	}()
	return o
}

func (o *etcdObserver) record(now time.Time, key, value string) {
	rest := strings.TrimPrefix(key, o.root+"/")
	parseValue := func() (int64, bool) {
		v, err := strconv.ParseInt(value, 10, 64)
		return v, err == nil
	}
	switch {
	case rest == "catalogs/"+o.catalog+"/cursor":
		o.puts[keyMasterCursor]++
		if v, ok := parseValue(); ok {
			o.master = append(o.master, cursorMove{now, v})
		}
	case strings.HasPrefix(rest, "members/") && strings.HasSuffix(rest, "/cursors/"+o.catalog):
		o.puts[keyMemberCursor]++
		member := strings.TrimSuffix(strings.TrimPrefix(rest, "members/"), "/cursors/"+o.catalog)
		if v, ok := parseValue(); ok {
			o.members[member] = append(o.members[member], cursorMove{now, v})
		}
	case strings.HasPrefix(rest, "members/") && strings.HasSuffix(rest, "/status"):
		o.puts[keyStatus]++
	case strings.HasPrefix(rest, "election/"):
		o.puts[keyElection]++
		if o.elected.IsZero() {
			o.elected = now
		}
	default:
		o.puts[keyOther]++
	}
}

// etcdCounts is a snapshot of the write counters.
type etcdCounts struct {
	revs int
	puts map[string]int
}

func (o *etcdObserver) counts() etcdCounts {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := make(map[string]int, len(o.puts))
	for k, v := range o.puts {
		p[k] = v
	}
	return etcdCounts{revs: o.revs, puts: p}
}

// masterTrack and memberTrack return copies of the histories.
func (o *etcdObserver) masterTrack() cursorTrack {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append(cursorTrack(nil), o.master...)
}

func (o *etcdObserver) memberTrack(member string) cursorTrack {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append(cursorTrack(nil), o.members[member]...)
}

// electedAt is when the first election key was seen (zero: not yet).
func (o *etcdObserver) electedAt() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.elected
}

// watchErr is the last error the watch reported.
func (o *etcdObserver) watchErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// fePoller samples what each native FE has applied, every interval, and records
// each change: the FE's own account of having applied an event, which the
// steady-state latency is measured against.
type fePoller struct {
	mu     sync.Mutex
	tracks []cursorTrack
}

func pollFEs(ctx context.Context, fes []*fetest.Server, catalog string, every time.Duration) (*fePoller, func()) {
	p := &fePoller{tracks: make([]cursorTrack, len(fes))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			now := time.Now()
			p.mu.Lock()
			for i, fe := range fes {
				if v := fe.AppliedEventID(catalog); v != p.tracks[i].latest() {
					p.tracks[i] = append(p.tracks[i], cursorMove{now, v})
				}
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p, func() { <-done }
}

func (p *fePoller) track(i int) cursorTrack {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append(cursorTrack(nil), p.tracks[i]...)
}
