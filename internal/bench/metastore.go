package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"gopkg.in/yaml.v3"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/cursorstore"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/embedetcd"
	"github.com/hmssync/hmssync/internal/names"
)

// `hmssync bench metastore` measures against a metastore that already holds a
// backlog (scripts/realhms/bench.sh builds one in a real Hive Metastore): per
// round, interleaved, the raw fetch of the events (N, M], the fetch with every
// event decoded (sequentially, and with the next fetch in flight while a batch
// decodes), and, for each sidecar binary and dialect, one `hmssync run` sidecar
// draining (N, M] into a fake FE, its cursors seeded at N in an embedded etcd.
// Nothing is appended: the backlog is the metastore's, read as often as there
// are measurements.

// SidecarBinary is one hmssync executable whose `run` is measured, under a
// label (e.g. before / after).
type SidecarBinary struct {
	Label, Path string
}

// ParseSidecarBinary reads LABEL=PATH (a --sidecar flag).
func ParseSidecarBinary(s string) (SidecarBinary, error) {
	label, path, ok := strings.Cut(s, "=")
	if !ok || label == "" || path == "" {
		return SidecarBinary{}, fmt.Errorf("--sidecar %q: want LABEL=PATH, e.g. before=/tmp/hmssync-old", s)
	}
	if err := names.Cluster(label); err != nil {
		return SidecarBinary{}, fmt.Errorf("--sidecar %q: the label names an etcd cluster subtree: %w", s, err)
	}
	return SidecarBinary{Label: label, Path: path}, nil
}

// MetastoreOptions are the settings of `hmssync bench metastore`.
type MetastoreOptions struct {
	// HMS is the metastore's thrift:// URI.
	HMS string
	// From and To bound the backlog: the events (From, To].
	From, To int64
	// BatchSize is the fetch loops' and the sidecars' catalogs[].batch_size.
	BatchSize int
	// Rounds is how many times each figure is measured, interleaved.
	Rounds int
	// Dialects are the sidecars' fe.dialect values measured.
	Dialects []string
	// Sidecars are the binaries whose `run` drains the backlog.
	Sidecars []SidecarBinary
	// Include is the sidecars' catalogs[].include (none: every table).
	Include []string
	// Command is the command line reported with the figures.
	Command string
}

// Check reports every bad option at once, named by its flag.
func (o MetastoreOptions) Check() error {
	var bad []string
	if _, err := hms.ParseURI(o.HMS); err != nil {
		bad = append(bad, fmt.Sprintf("--hms %q: %v", o.HMS, err))
	}
	if o.From < 0 || o.To <= o.From {
		bad = append(bad, fmt.Sprintf("--from %d --to %d: want 0 ≤ from < to (the backlog is the events (from, to])", o.From, o.To))
	}
	if o.BatchSize < 1 || o.BatchSize > 100000 {
		bad = append(bad, fmt.Sprintf("--batch-size %d: want 1 to 100000", o.BatchSize))
	}
	if o.Rounds < 1 {
		bad = append(bad, fmt.Sprintf("--rounds %d: want at least 1", o.Rounds))
	}
	for _, d := range o.Dialects {
		if d != applier.DialectDoris && d != applier.DialectNative {
			bad = append(bad, fmt.Sprintf("--dialects: %q is not doris or native", d))
		}
	}
	seen := map[string]bool{}
	for _, s := range o.Sidecars {
		if seen[s.Label] {
			bad = append(bad, fmt.Sprintf("--sidecar: label %q given twice", s.Label))
		}
		seen[s.Label] = true
		if fi, err := os.Stat(s.Path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			bad = append(bad, fmt.Sprintf("--sidecar %s=%s: not an executable file", s.Label, s.Path))
		}
	}
	if len(o.Dialects) > 0 && len(o.Sidecars) == 0 {
		bad = append(bad, "--sidecar: no binary to measure the dialects with")
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench metastore: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Spread is one figure over the rounds: each round's value and their minimum,
// median and maximum.
type Spread struct {
	Runs   []float64 `json:"runs"`
	Min    float64   `json:"min"`
	Median float64   `json:"median"`
	Max    float64   `json:"max"`
}

func spreadOf(xs []float64) Spread {
	s := Spread{Runs: xs, Min: math.NaN(), Max: math.NaN(), Median: median(xs)}
	for i, x := range xs {
		if i == 0 || x < s.Min {
			s.Min = x
		}
		if i == 0 || x > s.Max {
			s.Max = x
		}
	}
	return s
}

// MetastoreFigure is one rate measured in every round.
type MetastoreFigure struct {
	Name string `json:"name"`
	// EventsPerSec is the rate over the backlog.
	EventsPerSec Spread `json:"events_per_sec"`
	// ToRaw is the round's rate divided by the same round's raw fetch rate.
	ToRaw Spread `json:"to_raw_fetch"`
}

// MetastoreSidecar is what one binary's sidecar of one dialect measured.
type MetastoreSidecar struct {
	Label   string `json:"label"`
	Binary  string `json:"binary"`
	Dialect string `json:"dialect"`
	// DrainEPS runs from the sidecar's first commit beyond N to its commit
	// reaching M (as `hmssync bench`); FromElectedEPS from its election,
	// over the whole backlog (its first batch included).
	DrainEPS       Spread `json:"drain_events_per_sec"`
	FromElectedEPS Spread `json:"drain_from_election_events_per_sec"`
	// FirstCommitFallback counts the rounds whose drain was one commit (or
	// its commits were seen at one time): DrainEPS is then FromElectedEPS.
	FirstCommitFallback int    `json:"rounds_measured_from_election"`
	Commits             Spread `json:"commits"`
	// Per-process figures from /proc, over the sidecar's whole life up to M.
	CPUSeconds Spread `json:"cpu_seconds"`
	CPUPer100k Spread `json:"cpu_sec_per_100k_events"`
	PeakRSSMiB Spread `json:"peak_rss_mib"`
	// The sidecar's own step histograms (/metrics): mean ms per observation
	// (a fetch; the decode of a fetch; an apply of a batch; a commit) and
	// their totals in seconds.
	StageMS      map[string]Spread `json:"stage_ms_per_call"`
	StageSeconds map[string]Spread `json:"stage_seconds_total"`
	// Where each round ended, as etcd and the FE tell it: the committed
	// master cursor, and (native) the event id the FE reports applied, both
	// the backlog's last; the FE requests (doris: statements; native:
	// batches) the drain made.
	MasterCursors []int64 `json:"master_cursor_at_end"`
	FEApplied     []int64 `json:"fe_applied_event_id_at_end,omitempty"`
	FERequests    []int   `json:"fe_requests"`
}

// MetastoreReport is the output of `hmssync bench metastore`.
type MetastoreReport struct {
	Machine    string `json:"machine"`
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	LoadBefore string `json:"load_average_before"`
	LoadAfter  string `json:"load_average_after"`
	Command    string `json:"command"`
	HMS        string `json:"hms"`
	From       int64  `json:"from"`
	To         int64  `json:"to"`
	// Events, MessageBytes and Descriptors are what the raw fetch and the
	// decode found in (From, To]; the same in every round.
	Events       int64 `json:"events"`
	MessageBytes int64 `json:"message_bytes"`
	Descriptors  int64 `json:"descriptors"`
	BatchSize    int   `json:"batch_size"`
	Rounds       int   `json:"rounds"`
	// Figures are the raw fetch, the fetch+decode loops and every sidecar's
	// drain, in that order.
	Figures  []MetastoreFigure  `json:"figures"`
	Sidecars []MetastoreSidecar `json:"sidecars"`
	Seconds  float64            `json:"seconds"`
}

// fetchSample is one fetch loop over (from, to].
type fetchSample struct {
	events, bytes, descriptors int64
	took                       time.Duration
}

// drainSample is one sidecar's drain of (from, to].
type drainSample struct {
	eps, fromElectedEPS float64
	fellBack            bool
	commits             int
	cpu                 time.Duration
	peakRSS             int64
	stages              stageTimes
	masterCursor        int64 // committed, read from etcd at the end
	feApplied           int64 // native: what the FE reports applied at the end
	feRequests          int
}

// RunMetastore measures o.Rounds rounds, each: raw fetch, fetch+decode
// sequential, fetch+decode with the next fetch in flight, and every sidecar ×
// dialect drain. Progress goes to progress.
func RunMetastore(ctx context.Context, o MetastoreOptions, progress io.Writer) (*MetastoreReport, error) {
	start := time.Now()
	say := progressLine(progress, "bench metastore")
	rep := &MetastoreReport{
		Machine: fmt.Sprintf("%d cores, %s", runtime.NumCPU(), machineDescription()), GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), LoadBefore: loadAverage(), Command: o.Command, HMS: o.HMS,
		From: o.From, To: o.To, BatchSize: o.BatchSize, Rounds: o.Rounds,
	}
	say("load average %s on %s; backlog (%d, %d] at %s", rep.LoadBefore, rep.Machine, o.From, o.To, o.HMS)

	dir, err := os.MkdirTemp("", "hmssync-bench-metastore-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var env *drainEnv
	if len(o.Dialects) > 0 {
		etcd, err := embedetcd.Start(ctx, embedetcd.Config{Dir: filepath.Join(dir, "etcd")})
		if err != nil {
			return nil, err
		}
		defer etcd.Close()
		cli, err := etcd.Client()
		if err != nil {
			return nil, err
		}
		defer cli.Close()
		env = &drainEnv{o: o, etcd: etcd.Endpoints(), cli: cli, dir: dir, say: say}
	}

	type loop struct {
		name string
		run  func(context.Context) (fetchSample, error)
	}
	loops := []loop{
		{"raw fetch", func(ctx context.Context) (fetchSample, error) { return fetchLoop(ctx, o, false) }},
		{"fetch + decode, sequential", func(ctx context.Context) (fetchSample, error) { return fetchLoop(ctx, o, true) }},
		{"fetch + decode, next fetch in flight", func(ctx context.Context) (fetchSample, error) { return fetchDecodePipelined(ctx, o) }},
	}
	rates := make([][]float64, len(loops))
	type drainKey struct {
		bin     SidecarBinary
		dialect string
	}
	var drainKeys []drainKey
	for _, b := range o.Sidecars {
		for _, d := range o.Dialects {
			drainKeys = append(drainKeys, drainKey{b, d})
		}
	}
	drains := make([][]drainSample, len(drainKeys))
	want := o.To - o.From
	// One raw fetch loop before the rounds, not counted: a metastore started
	// just before (a JVM still compiling its hot paths, a database whose pages
	// are not cached yet) serves its first loop at half the rate of the
	// later ones (Hive 4.0.1 on Derby), which would leave the first round's
	// ratios saying nothing.
	warm, err := fetchLoop(ctx, o, false)
	if err != nil {
		return nil, fmt.Errorf("warm-up fetch loop: %w", err)
	}
	say("warm-up (not counted): raw fetch: %d events in %.2fs, %.0f events/s", warm.events, warm.took.Seconds(), perSecond(warm.events, warm.took))
	for round := 1; round <= o.Rounds; round++ {
		for i, l := range loops {
			s, err := l.run(ctx)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round, l.name, err)
			}
			if s.events != want {
				return nil, fmt.Errorf("round %d, %s: read %d events in (%d, %d], want %d: the log has gaps there (cleaned events?) or ends before %d",
					round, l.name, s.events, o.From, o.To, want, o.To)
			}
			if i == 0 {
				rep.Events, rep.MessageBytes = s.events, s.bytes
			} else if rep.Descriptors == 0 {
				rep.Descriptors = s.descriptors
			} else if s.descriptors != rep.Descriptors {
				return nil, fmt.Errorf("round %d, %s: %d descriptors, another loop decoded %d from the same events", round, l.name, s.descriptors, rep.Descriptors)
			}
			rates[i] = append(rates[i], perSecond(s.events, s.took))
			say("round %d/%d: %s: %d events (%.1f MB of messages) in %.2fs, %.0f events/s",
				round, o.Rounds, l.name, s.events, float64(s.bytes)/1e6, s.took.Seconds(), perSecond(s.events, s.took))
		}
		for i, k := range drainKeys {
			s, err := env.drain(ctx, k.bin, k.dialect, round)
			if err != nil {
				return nil, fmt.Errorf("round %d, sidecar %s (%s), %s: %w", round, k.bin.Label, k.bin.Path, k.dialect, err)
			}
			drains[i] = append(drains[i], s)
		}
	}

	raw := rates[0]
	toRaw := func(xs []float64) Spread {
		r := make([]float64, len(xs))
		for i, x := range xs {
			if raw[i] > 0 {
				r[i] = x / raw[i]
			}
		}
		return spreadOf(r)
	}
	for i, l := range loops {
		rep.Figures = append(rep.Figures, MetastoreFigure{Name: l.name, EventsPerSec: spreadOf(rates[i]), ToRaw: toRaw(rates[i])})
	}
	for i, k := range drainKeys {
		sc := sidecarFigures(k.bin, k.dialect, drains[i], want)
		rep.Sidecars = append(rep.Sidecars, sc)
		var eps []float64
		for _, s := range drains[i] {
			eps = append(eps, s.eps)
		}
		rep.Figures = append(rep.Figures, MetastoreFigure{Name: fmt.Sprintf("sidecar drain, %s %s", k.bin.Label, k.dialect), EventsPerSec: sc.DrainEPS, ToRaw: toRaw(eps)})
	}
	rep.LoadAfter = loadAverage()
	rep.Seconds = time.Since(start).Seconds()
	say("done in %.0fs; load average %s", rep.Seconds, rep.LoadAfter)
	return rep, nil
}

// metastoreClient is a client of the metastore, connected (its connecting is
// not part of any measurement).
func metastoreClient(ctx context.Context, uri string) (*hms.Client, error) {
	hc, err := hms.NewClient(hms.ClientConfig{URIs: []string{uri}, DialTimeout: 10 * time.Second, CallTimeout: 60 * time.Second})
	if err != nil {
		return nil, err
	}
	if _, err := hc.CurrentEventID(ctx); err != nil {
		hc.Close()
		return nil, fmt.Errorf("connect to the metastore %s: %w", uri, err)
	}
	return hc, nil
}

// fetchBatch reads the next batch after after, at most o.BatchSize events and
// never beyond o.To, and refuses a gap (events cleaned: the backlog is not what
// was measured before).
func fetchBatch(ctx context.Context, hc *hms.Client, o MetastoreOptions, after int64) ([]message.Event, error) {
	f, err := hc.NextEvents(ctx, after, int(min(int64(o.BatchSize), o.To-after)), nil)
	if err != nil {
		return nil, fmt.Errorf("fetch after %d: %w", after, err)
	}
	if f.Continuity != hms.Contiguous {
		return nil, fmt.Errorf("fetch after %d: the log is not contiguous there (%s): were events cleaned?", after, f.Continuity)
	}
	if len(f.Events) == 0 {
		return nil, fmt.Errorf("fetch after %d: no events, want up to %d", after, o.To)
	}
	return f.Events, nil
}

// fetchLoop is the bare fetch loop over (o.From, o.To], with the same client
// and batch size as a sidecar; with decode, each batch is decoded before the
// next is fetched.
func fetchLoop(ctx context.Context, o MetastoreOptions, decode bool) (fetchSample, error) {
	hc, err := metastoreClient(ctx, o.HMS)
	if err != nil {
		return fetchSample{}, err
	}
	defer hc.Close()
	var s fetchSample
	dec := message.NewDecoder("")
	t0 := time.Now()
	for after := o.From; after < o.To; {
		evs, err := fetchBatch(ctx, hc, o, after)
		if err != nil {
			return s, err
		}
		if decode {
			n, err := decodeSpread(dec, evs, runtime.GOMAXPROCS(0))
			if err != nil {
				return s, err
			}
			s.descriptors += int64(n)
		}
		s.add(evs)
		after = evs[len(evs)-1].ID
	}
	s.took = time.Since(t0)
	return s, nil
}

func (s *fetchSample) add(evs []message.Event) {
	s.events += int64(len(evs))
	for _, e := range evs {
		s.bytes += int64(len(e.Message))
	}
}

// fetchDecodePipelined is the fetch+decode loop with the next fetch in flight
// while a batch decodes (on one goroutine, as a sidecar's): one fetcher
// goroutine hands each batch over an unbuffered channel, so it is at most one
// fetch ahead.
func fetchDecodePipelined(ctx context.Context, o MetastoreOptions) (fetchSample, error) {
	hc, err := metastoreClient(ctx, o.HMS)
	if err != nil {
		return fetchSample{}, err
	}
	defer hc.Close()
	ctx, cancel := context.WithCancel(ctx)
	type fetched struct {
		evs []message.Event
		err error
	}
	ch := make(chan fetched)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	t0 := time.Now()
	wg.Go(func() {
		defer close(ch)
		for after := o.From; after < o.To; {
			evs, err := fetchBatch(ctx, hc, o, after)
			select {
			case ch <- fetched{evs, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
			after = evs[len(evs)-1].ID
		}
	})
	var s fetchSample
	dec := message.NewDecoder("")
	for f := range ch {
		if f.err != nil {
			return s, f.err
		}
		// One goroutine, as a sidecar decodes while its next fetch is in
		// flight (agent's decodeWorkers).
		n, err := decodeSpread(dec, f.evs, 1)
		if err != nil {
			return s, err
		}
		s.descriptors += int64(n)
		s.add(f.evs)
	}
	s.took = time.Since(t0)
	return s, nil
}

// minEventsPerDecoder is agent's: below it a fetch decodes on one goroutine.
const minEventsPerDecoder = 64

// decodeSpread decodes every event as a sidecar does (agent's decodeAll):
// spread over up to workers goroutines in contiguous runs (a sidecar spreads a
// fetch over GOMAXPROCS goroutines only when no other fetch is in flight). It returns the
// number of descriptors; an event that does not decode is an error, since a
// sidecar would self-heal on it and the drain would not be comparable.
func decodeSpread(dec message.Decoder, evs []message.Event, workers int) (int, error) {
	counts := make([]int, len(evs))
	errs := make([]error, len(evs))
	workers = max(1, min(workers, len(evs)/minEventsPerDecoder))
	per := (len(evs) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(evs); lo += per {
		wg.Go(func() {
			for i := lo; i < min(lo+per, len(evs)); i++ {
				var ds []change.Descriptor
				ds, errs[i] = dec.Decode(evs[i])
				counts[i] = len(ds)
			}
		})
	}
	wg.Wait()
	n := 0
	for i, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("decode event %d (%s): %w", evs[i].ID, evs[i].Type, err)
		}
		n += counts[i]
	}
	return n, nil
}

// drainEnv is what every drain of one invocation shares.
type drainEnv struct {
	o    MetastoreOptions
	etcd []string
	cli  *clientv3.Client
	dir  string
	say  func(format string, args ...any)
}

// drainMember is the one sidecar's member name in every drain's cluster.
const drainMember = "sidecar-1"

// drain runs one sidecar of bin with dialect over (o.From, o.To]: a cluster of
// its own in etcd with the master cursor and the member's cursor at From (epoch
// 0, one lineage), a fresh fake FE (native: full-refreshed at From over the
// native protocol, as the sidecar's own first refresh would have left it), and
// `bin run --config FILE`. It ends when the master cursor is at To.
func (e *drainEnv) drain(ctx context.Context, bin SidecarBinary, dialect string, round int) (s drainSample, err error) {
	o := e.o
	cluster := fmt.Sprintf("bench-metastore-%s-%s-%d", bin.Label, dialect, round)
	label := fmt.Sprintf("round %d/%d: sidecar %s %s", round, o.Rounds, bin.Label, dialect)
	store := cursorstore.New(e.cli, cursorstore.DefaultPrefix, cluster, 0, nil)
	if _, err := store.SetMaster(ctx, benchCatalog, o.From); err != nil {
		return s, fmt.Errorf("seed the master cursor: %w", err)
	}
	// With the open-transaction state of a member that tracked the log from
	// its start: the backlog's transactions write no table open across From,
	// and without a state the commits of those opened before From would each
	// cost a full refresh (unknown commits), which is not what is measured.
	if err := store.PutMemberCursorTxns(ctx, drainMember, benchCatalog, o.From, 0, agent.TrackedTxnState()); err != nil {
		return s, fmt.Errorf("seed the member cursor: %w", err)
	}
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	if dialect == applier.DialectNative {
		if err := seedNativeFE(ctx, fe.URL, o.From); err != nil {
			return s, err
		}
	}
	t := &topology{env: &benchEnv{cli: e.cli}, cluster: cluster, label: label}
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	if err := t.observe(octx); err != nil {
		return s, err
	}
	httpAddr, err := freeAddress()
	if err != nil {
		return s, err
	}
	runDir := filepath.Join(e.dir, cluster)
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return s, err
	}
	cfgPath := filepath.Join(runDir, drainMember+".yaml")
	if err := writeRunConfig(cfgPath, cluster, e.etcd, fe.URL, dialect, httpAddr, o); err != nil {
		return s, err
	}
	started := time.Now()
	child, err := startChild(runDir, drainMember, bin.Path, []string{"run", "--config", cfgPath})
	if err != nil {
		return s, err
	}
	defer func() {
		if serr := child.stop(15 * time.Second); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			err = fmt.Errorf("%w%s", err, childLogs([]*benchChild{child}))
		}
	}()
	n := o.To - o.From
	lastSay := time.Now()
	err = benchWait(ctx, drainTimeout(n), fmt.Sprintf("the drain of (%d, %d]", o.From, o.To), func() (bool, error) {
		if child.exited() {
			return false, fmt.Errorf("the sidecar exited early: %v", child.waitErr)
		}
		if err := t.obs.watchErr(); err != nil {
			return false, err
		}
		if time.Since(lastSay) >= 5*time.Second {
			lastSay = time.Now()
			e.say("%s: draining: master cursor %d of %d (%.0fs)", label, max(t.obs.masterTrack().latest(), 0), o.To, time.Since(started).Seconds())
		}
		return t.obs.masterTrack().latest() >= o.To && t.obs.memberTrack(drainMember).latest() >= o.To, nil
	})
	if err != nil {
		return s, fmt.Errorf("%s: %w", label, err)
	}
	if s.cpu, err = processCPU(child.pid()); err != nil {
		return s, err
	}
	if s.peakRSS, err = processPeakRSS(child.pid()); err != nil {
		return s, err
	}
	if s.stages, err = scrapeStages(ctx, httpAddr); err != nil {
		return s, fmt.Errorf("%s: %w", label, err)
	}
	if err := checkDrained(fe, dialect, o.To, s.stages); err != nil {
		return s, fmt.Errorf("%s: %w", label, err)
	}
	mc, err := store.MasterCursor(ctx, benchCatalog)
	if err != nil {
		return s, fmt.Errorf("%s: %w", label, err)
	}
	s.masterCursor, s.feApplied = mc.Value, fe.AppliedEventID(benchCatalog)
	if dialect == applier.DialectNative {
		s.feRequests = len(fe.Changes())
	} else {
		s.feRequests = len(fe.Statements())
	}
	mt := t.obs.masterTrack()
	elected := t.obs.electedAt()
	if elected.IsZero() {
		elected = started
	}
	commits, from, events, err := drainCommits(mt, o.From, o.To, elected)
	if err != nil {
		return s, fmt.Errorf("%s: %w", label, err)
	}
	end := commits[len(commits)-1]
	s.commits = len(commits)
	s.eps = perSecond(events, end.at.Sub(from))
	s.fellBack = from.Equal(elected)
	s.fromElectedEPS = perSecond(n, end.at.Sub(elected))
	e.say("%s: drained %d events in %d commits: %.0f events/s from the first commit (%.0f from the election); CPU %.2fs, peak RSS %.0f MiB; per call fetch %.1f ms, decode %.1f ms, apply %.1f ms, commit %.1f ms",
		label, n, s.commits, s.eps, s.fromElectedEPS, s.cpu.Seconds(), float64(s.peakRSS)/(1<<20),
		meanMS(s.stages.fetch, s.stages.fetches), meanMS(s.stages.decode, s.stages.decodes), meanMS(s.stages.apply, s.stages.applies), meanMS(s.stages.commit, s.stages.commits))
	return s, nil
}

// checkDrained checks that the drain reached the FE and was one: a native FE
// reports to as applied; a doris FE got REFRESH statements and no full refresh
// (REFRESH CATALOG alone, which would make the figure a refresh's, not a
// drain's); the sidecar counted no full refresh.
func checkDrained(fe *fetest.Server, dialect string, to int64, st stageTimes) error {
	if st.fullRefreshes > 0 {
		return fmt.Errorf("the sidecar made %.0f full refreshes (hmssync_full_refreshes_total): it did not drain from the seeded cursor; see its log", st.fullRefreshes)
	}
	if dialect == applier.DialectNative {
		if got := fe.AppliedEventID(benchCatalog); got != to {
			return fmt.Errorf("the FE reports event %d applied, want %d", got, to)
		}
		return nil
	}
	stmts := fe.Statements()
	if len(stmts) == 0 {
		return errors.New("the FE received no statement during the drain")
	}
	for _, st := range stmts {
		if st == "REFRESH CATALOG "+benchCatalog || st == "REFRESH CATALOG `"+benchCatalog+"`" {
			return fmt.Errorf("the FE received a full refresh (%q): the sidecar did not drain from the seeded cursor", st)
		}
	}
	return nil
}

// seedNativeFE leaves a native FE as a full refresh at event at would: the
// sidecar's check of what its FE applied (agent's checkFEApplied) then finds
// nothing missing and drains instead of refreshing.
func seedNativeFE(ctx context.Context, url string, at int64) error {
	a, err := applier.New(applier.Config{Dialect: applier.DialectNative, URL: url, User: "root", Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	if err := a.Apply(ctx, change.Batch{Catalog: benchCatalog, From: -1, To: at, FullRefresh: true}); err != nil {
		return fmt.Errorf("seed the fake FE at event %d: %w", at, err)
	}
	return nil
}

// writeRunConfig writes the sidecar's configuration: only the keys a drain
// needs, so that an older binary's `run` reads it too; everything else keeps
// that binary's defaults.
func writeRunConfig(path, cluster string, etcd []string, feURL, dialect, httpAddr string, o MetastoreOptions) error {
	cat := map[string]any{"name": benchCatalog, "hms_uris": []string{o.HMS}, "batch_size": o.BatchSize}
	if len(o.Include) > 0 {
		cat["include"] = o.Include
	}
	cfg := map[string]any{
		"cluster":  cluster,
		"member":   drainMember,
		"etcd":     map[string]any{"endpoints": etcd},
		"fe":       map[string]any{"url": feURL, "dialect": dialect},
		"catalogs": []any{cat},
		"http":     map[string]any{"listen": httpAddr},
		"log":      map[string]any{"level": "warn", "format": "json"},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func meanMS(sum, n float64) float64 {
	if n <= 0 {
		return 0
	}
	return sum / n * 1000
}

// sidecarFigures gathers one binary × dialect's rounds.
func sidecarFigures(bin SidecarBinary, dialect string, runs []drainSample, events int64) MetastoreSidecar {
	sc := MetastoreSidecar{Label: bin.Label, Binary: bin.Path, Dialect: dialect, StageMS: map[string]Spread{}, StageSeconds: map[string]Spread{}}
	col := func(get func(drainSample) float64) Spread {
		var xs []float64
		for _, s := range runs {
			xs = append(xs, get(s))
		}
		return spreadOf(xs)
	}
	sc.DrainEPS = col(func(s drainSample) float64 { return s.eps })
	sc.FromElectedEPS = col(func(s drainSample) float64 { return s.fromElectedEPS })
	for _, s := range runs {
		if s.fellBack {
			sc.FirstCommitFallback++
		}
		sc.MasterCursors = append(sc.MasterCursors, s.masterCursor)
		sc.FERequests = append(sc.FERequests, s.feRequests)
		if dialect == applier.DialectNative {
			sc.FEApplied = append(sc.FEApplied, s.feApplied)
		}
	}
	sc.Commits = col(func(s drainSample) float64 { return float64(s.commits) })
	sc.CPUSeconds = col(func(s drainSample) float64 { return s.cpu.Seconds() })
	sc.CPUPer100k = col(func(s drainSample) float64 { return s.cpu.Seconds() / float64(events) * 100000 })
	sc.PeakRSSMiB = col(func(s drainSample) float64 { return float64(s.peakRSS) / (1 << 20) })
	stages := map[string]func(stageTimes) (float64, float64){
		"fetch":  func(t stageTimes) (float64, float64) { return t.fetch, t.fetches },
		"decode": func(t stageTimes) (float64, float64) { return t.decode, t.decodes },
		"apply":  func(t stageTimes) (float64, float64) { return t.apply, t.applies },
		"commit": func(t stageTimes) (float64, float64) { return t.commit, t.commits },
	}
	for name, get := range stages {
		sc.StageMS[name] = col(func(s drainSample) float64 { sum, n := get(s.stages); return meanMS(sum, n) })
		sc.StageSeconds[name] = col(func(s drainSample) float64 { sum, _ := get(s.stages); return sum })
	}
	return sc
}
