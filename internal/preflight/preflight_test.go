package preflight_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/version"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/preflight"
	"github.com/hmssync/hmssync/internal/testutil/etcdtest"
)

// world is a healthy topology: a real embedded etcd, a fake metastore with a
// few events, a fake Doris FE declaring the catalog.
type world struct {
	etcd *etcdtest.Server
	hms  *hmstest.Server
	fe   *fetest.Server
}

func newWorld(t *testing.T, feOpts fetest.Options) *world {
	t.Helper()
	w := &world{etcd: etcdtest.New(t), hms: hmstest.NewServer()}
	t.Cleanup(w.hms.Close)
	if err := w.hms.CreateDatabase("sales"); err != nil {
		t.Fatal(err)
	}
	if err := w.hms.CreateTable(hmstest.Table{DB: "sales", Name: "orders", PartitionKeys: []string{"dt"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.hms.AddPartitions("sales", "orders", []string{"2024-06-01"}, []string{"2024-06-02"}); err != nil {
		t.Fatal(err)
	}
	w.fe = fetest.NewServer(feOpts)
	t.Cleanup(w.fe.Close)
	return w
}

func (w *world) target() preflight.Target {
	return preflight.Target{
		Member: "fe-0",
		Etcd: preflight.Etcd{Client: clientv3.Config{Endpoints: w.etcd.Endpoints(), DialTimeout: 2 * time.Second},
			Prefix: "/hmssync", Cluster: "prod", RequestTimeout: 2 * time.Second},
		FE: preflight.FE{URL: w.fe.URL, Dialect: "doris", User: "root", Timeout: 2 * time.Second},
		Catalogs: []preflight.Catalog{{Name: "hive", URIs: []string{w.hms.URI()}, HMSCatalog: "hive",
			Timeout: 2 * time.Second, Window: 1000}},
	}
}

var hiveCatalog = []fetest.Catalog{{Name: "hive", Properties: map[string]string{"type": "hms", "hive.metastore.uris": "thrift://hms:9083"}}}

// find returns the one result whose check contains sub.
func find(t *testing.T, rs []preflight.Result, sub string) preflight.Result {
	t.Helper()
	var found []preflight.Result
	for _, r := range rs {
		if strings.Contains(r.Check, sub) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one check containing %q, got %d in:\n%s", sub, len(found), text(rs))
	}
	return found[0]
}

func text(rs []preflight.Result) string {
	var b bytes.Buffer
	_ = preflight.WriteText(&b, rs)
	return b.String()
}

func TestAHealthyTopologyPassesEveryCheck(t *testing.T) {
	w := newWorld(t, fetest.Options{Catalogs: hiveCatalog})
	rs := preflight.Run(context.Background(), w.target())
	if !preflight.Passed(rs) {
		t.Fatalf("want every check to pass:\n%s", text(rs))
	}
	for _, r := range rs {
		if r.Fix != "" {
			t.Errorf("%s passed but carries a fix %q", r.Check, r.Fix)
		}
	}
	if r := find(t, rs, "version"); r.Detail != version.Version {
		t.Errorf("etcd version: got %q, want the embedded server's %q", r.Detail, version.Version)
	}
	cur := w.hms.CurrentEventID()
	if cur < 3 {
		t.Fatalf("the fake metastore logged %d events; the checks below say nothing", cur)
	}
	if r := find(t, rs, "metastore "+w.hms.URI()+" answers"); !strings.Contains(r.Detail, "current notification event id "+itoa(cur)) {
		t.Errorf("metastore: %q does not name the current id %d", r.Detail, cur)
	}
	r := find(t, rs, "newest")
	for _, typ := range []string{"CREATE_DATABASE 1", "CREATE_TABLE 1", "ADD_PARTITION"} {
		if !strings.Contains(r.Detail, typ) {
			t.Errorf("window %q lacks %q", r.Detail, typ)
		}
	}
	if !strings.Contains(r.Detail, "newest "+itoa(cur)) {
		t.Errorf("window %q does not name the newest event %d", r.Detail, cur)
	}
	find(t, rs, "catalog hive: on the FE, of type hms")
	if r := find(t, rs, "own event sync is off"); !strings.Contains(r.Detail, "unset") {
		t.Errorf("event sync: %q, want it reported unset", r.Detail)
	}
	// The write check leaves nothing behind.
	resp, err := w.etcd.Client.Get(context.Background(), "/hmssync/prod/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("the check left %d keys under /hmssync/prod/", resp.Count)
	}
	if wr := find(t, rs, "etcd lease and write"); !strings.Contains(wr.Detail, "/hmssync/prod/preflight/fe-0") {
		t.Errorf("write check %q does not name its key", wr.Detail)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestAnFEThatRefusesThePasswordFailsWithTheKeysToFix(t *testing.T) {
	w := newWorld(t, fetest.Options{Password: "secret", Catalogs: hiveCatalog})
	rs := preflight.Run(context.Background(), w.target())
	r := find(t, rs, "FE "+w.fe.URL)
	if r.OK || !strings.Contains(r.Fix, "fe.password_file") {
		t.Fatalf("want a failure naming fe.password_file, got %+v", r)
	}
	if preflight.Passed(rs) {
		t.Fatal("Passed with a failed check")
	}
	for _, r := range rs {
		if strings.Contains(r.Check, "catalog hive: on the FE") {
			t.Errorf("catalog checked on an FE that refused the credentials: %+v", r)
		}
	}
}

func TestCatalogsMissingOfAnotherKindOrSyncingThemselvesFail(t *testing.T) {
	w := newWorld(t, fetest.Options{Catalogs: []fetest.Catalog{
		{Name: "jdbc", Properties: map[string]string{"type": "jdbc"}},
		{Name: "self", Properties: map[string]string{"type": "hms", "hive.enable_hms_events_incremental_sync": "true"}},
		{Name: "off", Properties: map[string]string{"type": "hms", "hive.enable_hms_events_incremental_sync": "false"}},
	}})
	tg := w.target()
	base := tg.Catalogs[0]
	tg.Catalogs = nil
	for _, n := range []string{"hive", "jdbc", "self", "off"} {
		c := base
		c.Name = n
		tg.Catalogs = append(tg.Catalogs, c)
	}
	rs := preflight.Run(context.Background(), tg)
	if r := find(t, rs, "catalog hive: on the FE"); r.OK || !strings.Contains(r.Fix, "CREATE CATALOG `hive`") {
		t.Errorf("missing catalog: %+v", r)
	}
	if r := find(t, rs, "catalog jdbc: on the FE"); r.OK || !strings.Contains(r.Detail, "jdbc") {
		t.Errorf("jdbc catalog: %+v", r)
	}
	if r := find(t, rs, "catalog self: the FE's own event sync"); r.OK ||
		r.Fix != "ALTER CATALOG `self` SET PROPERTIES (\"hive.enable_hms_events_incremental_sync\" = \"false\")" {
		t.Errorf("self-syncing catalog: %+v", r)
	}
	if r := find(t, rs, "catalog off: the FE's own event sync"); !r.OK || !strings.HasSuffix(r.Detail, "= false") {
		t.Errorf("catalog with the sync off: %+v", r)
	}
}

func TestAMetastoreThatIsDownOrKeepsNoLogFails(t *testing.T) {
	w := newWorld(t, fetest.Options{Catalogs: hiveCatalog})
	empty := hmstest.NewServer()
	t.Cleanup(empty.Close)
	down := freeAddr(t)
	tg := w.target()
	tg.Catalogs = []preflight.Catalog{
		{Name: "down", URIs: []string{"thrift://" + down}, Timeout: time.Second, Window: 10},
		{Name: "empty", URIs: []string{empty.URI()}, Timeout: time.Second, Window: 10},
	}
	rs := preflight.Run(context.Background(), tg)
	if r := find(t, rs, "catalog down: metastore"); r.OK || !strings.Contains(r.Detail, down) || !strings.Contains(r.Fix, "hms_uris") {
		t.Errorf("down metastore: %+v", r)
	}
	if r := find(t, rs, "catalog empty: notification log"); r.OK || !strings.Contains(r.Fix, "DbNotificationListener") {
		t.Errorf("metastore without a log: %+v", r)
	}
}

func TestUndecodableEventsInTheWindowFail(t *testing.T) {
	w := newWorld(t, fetest.Options{Catalogs: hiveCatalog})
	_, last := w.hms.Append(message.Event{Type: "CREATE_TABLE", DB: "sales", Table: "bad", Message: "{not json", Format: "json-0.2"})
	rs := preflight.Run(context.Background(), w.target())
	r := find(t, rs, "newest")
	if r.OK || !strings.Contains(r.Detail, "1 do not decode, first event "+itoa(last)) {
		t.Errorf("poison event %d: %+v", last, r)
	}
}

func TestAnUnreachableEtcdFailsWithinItsDeadline(t *testing.T) {
	w := newWorld(t, fetest.Options{Catalogs: hiveCatalog})
	tg := w.target()
	tg.Etcd.Client.Endpoints = []string{"http://" + freeAddr(t)}
	tg.Etcd.RequestTimeout = 500 * time.Millisecond
	start := time.Now()
	rs := preflight.Run(context.Background(), tg)
	r := find(t, rs, "etcd endpoint")
	if r.OK || !strings.Contains(r.Fix, "etcd.endpoints") {
		t.Errorf("unreachable etcd: %+v", r)
	}
	if n := countPrefix(rs, "etcd"); n != 1 {
		t.Errorf("want only the endpoint check once etcd is unreachable, got %d etcd checks:\n%s", n, text(rs))
	}
	// The rest is still checked: the operator sees the whole list.
	if r := find(t, rs, "catalog hive: on the FE"); !r.OK {
		t.Errorf("FE checks after an etcd failure: %+v", r)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s; the deadlines are 0.5 s and 2 s", d)
	}
}

func TestNativeFEWithoutTheCatalogFails(t *testing.T) {
	w := newWorld(t, fetest.Options{Catalogs: []fetest.Catalog{{Name: "other"}}})
	tg := w.target()
	tg.FE.Dialect = "native"
	rs := preflight.Run(context.Background(), tg)
	if r := find(t, rs, "catalog hive: on the FE"); r.OK || !strings.Contains(r.Detail, "404") {
		t.Errorf("native FE without the catalog: %+v", r)
	}
	if r := find(t, rs, "FE "+w.fe.URL); !r.OK {
		t.Errorf("native ping: %+v", r)
	}
}

func TestJSONReportCarriesEveryResult(t *testing.T) {
	rs := []preflight.Result{{Check: "a", OK: true, Detail: "d"}, {Check: "b", Detail: "e", Fix: "f"}}
	var b bytes.Buffer
	if err := preflight.WriteJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	want := `{"ok":false,"checks":[{"check":"a","ok":true,"detail":"d"},{"check":"b","ok":false,"detail":"e","fix":"f"}]}` + "\n"
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
	b.Reset()
	_ = preflight.WriteText(&b, rs)
	wantText := "✓ a: d\n✗ b: e\n    fix: f\n1 of 2 checks failed\n"
	if b.String() != wantText {
		t.Errorf("got  %q\nwant %q", b.String(), wantText)
	}
}

func countPrefix(rs []preflight.Result, p string) int {
	n := 0
	for _, r := range rs {
		if strings.HasPrefix(r.Check, p) {
			n++
		}
	}
	return n
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
