package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"go.uber.org/zap"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// stepRig is one metastore, one client and two FEs (doris and native), with a
// catalog loop per FE: the pieces of a sync step, all speaking their real wire
// protocols.
type stepRig struct {
	hms    *hmstest.Server
	loops  []*catalogLoop
	agents []*Agent // loops[i]'s
}

func newStepRig(tb testing.TB) *stepRig {
	tb.Helper()
	r := &stepRig{hms: hmstest.NewServer()}
	tb.Cleanup(r.hms.Close)
	hc, err := hms.NewClient(hms.ClientConfig{URIs: []string{r.hms.URI()}, DialTimeout: 2 * time.Second, CallTimeout: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { hc.Close() })
	for _, dialect := range []string{applier.DialectDoris, applier.DialectNative} {
		fe := fetest.NewServer(fetest.Options{Password: "pw"})
		tb.Cleanup(fe.Close)
		ap, err := applier.New(applier.Config{Dialect: dialect, URL: fe.URL, User: "root", Password: "pw", Timeout: 5 * time.Second})
		if err != nil {
			tb.Fatal(err)
		}
		a := &Agent{cfg: Config{Applier: ap}, m: newMetrics(), log: zap.NewNop()}
		cat := Catalog{Name: "hive", Source: hc, Decoder: message.Decoder{}, BatchSize: 10, CallTimeout: 5 * time.Second,
			Exclude: []*regexp.Regexp{regexp.MustCompile(`^(?:secret\..*)$`)}}
		r.loops = append(r.loops, newCatalogLoop(a, cat))
		r.agents = append(r.agents, a)
	}
	return r
}

// step serves ev from the metastore and runs one step of each loop over it:
// fetch, decode, filter, count, apply. It fails the test on anything but a
// clean apply or a poison event.
func (r *stepRig) step(t *testing.T, ev message.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	after := r.hms.CurrentEventID()
	r.hms.Clean(after + 1) // the log holds only this event: memory stays flat over a long run
	_, id := r.hms.Append(ev)
	for i, l := range r.loops {
		f, err := l.fetchEvents(ctx, after, 10, true)
		if err != nil {
			t.Fatalf("fetch of event %d: %v", id, err)
		}
		want := ev
		want.ID = id
		if len(f.Events) != 1 || f.Events[0] != want {
			t.Fatalf("fetched %+v; want exactly the served event %+v", f.Events, want)
		}
		var d decoded
		if err := l.decode(f.Events, &d, false); err != nil {
			var pe *poisonError
			if !errors.As(err, &pe) || pe.eventID != id {
				t.Fatalf("decode of event %d: %v; want nil or a poison error naming it", id, err)
			}
			continue
		}
		if err := l.applyDecoded(ctx, &d, id); err != nil {
			t.Fatalf("%s FE refused the changes %+v of event %d: %v", l.applier.Dialect(), d.changes, id, err)
		}
		// Label values come from a closed set whatever the metastore sends.
		if n := seriesOf(t, r.agents[i], "hmssync_events_received_total"); n > len(message.EventTypes())+1 {
			t.Fatalf("events_received has %d series; at most %d types (the known ones and other) may appear", n, len(message.EventTypes())+1)
		}
	}
}

// seedEvents are the real corpus (hms/message/testdata/real.jsonl, captured from
// production metastores).
func seedEvents(tb testing.TB) []message.Event {
	tb.Helper()
	f, err := os.Open("../hms/message/testdata/real.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var evs []message.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev message.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			tb.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// FuzzStep sends fuzzed events through a whole step: a fake metastore serves
// them over Thrift, the loop fetches, decodes, filters, counts and applies them
// to a doris and a native fake FE over HTTP. No event may panic the process,
// be altered on the way, or make an FE refuse the statements it yields.
func FuzzStep(f *testing.F) {
	for _, ev := range seedEvents(f) {
		f.Add(ev.Type, ev.Format, ev.Message, ev.DB, ev.Table, ev.Catalog)
	}
	f.Add("\xff", "json-0.2", "{}", "", "", "")
	f.Add("CREATE_TABLE", "json-0.2", `{"db":"s`+"\xff"+`x","table":"t"}`, "", "", "hive")
	f.Add("CREATE_TABLE", "json-0.2", "{\"db\":\"a`b\",\"table\":\"c\\\"d\\n\"}", "", "", "hive")
	// Transaction events as Hive 3.1.3 writes them (header "null" and " ").
	f.Add("OPEN_TXN", "json-0.2", `{"txnIds":null,"timestamp":1,"fromTxnId":7,"toTxnId":7,"server":"","servicePrincipal":""}`, "null", " ", "")
	f.Add("ALLOC_WRITE_ID_EVENT", "json-0.2", `{"txnIdList":[7],"writeIdList":[1],"dbName":"sales","tableName":"orders","timestamp":1}`, "null", " ", "")
	f.Add("COMMIT_TXN", "json-0.2", `{"txnid":7,"timestamp":1,"server":"","servicePrincipal":""}`, "null", " ", "")
	f.Add("COMMIT_COMPACTION_EVENT", "json-0.2", `{"txnid":8,"compactionId":1,"type":"MINOR","dbname":"sales","tableName":"orders","partName":"dt=1"}`, "", "", "")
	r := newStepRig(f)
	f.Fuzz(func(t *testing.T, typ, format, msg, db, table, catalog string) {
		r.step(t, message.Event{Time: 1616068620, Type: typ, Format: format, Message: msg, DB: db, Table: table, Catalog: catalog})
	})
}

// seriesOf counts the series of one metric family.
func seriesOf(t *testing.T, a *Agent, name string) int {
	fams, err := a.m.reg.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}
