package applier

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hmssync/hmssync/change"
)

// FuzzFEAnswer has an FE answer every request with an arbitrary status and
// body: both dialects return nil or an *Error with a class, never panic, and
// never hold more of the answer than they bound. The objects an *Error names
// are objects of the batch (or their databases), without repeats, at most
// maxRejectedObjects.
func FuzzFEAnswer(f *testing.F) {
	f.Add(200, []byte(`{"code":0,"msg":"success","data":{}}`))
	f.Add(200, []byte(`{"code":1,"msg":"errCode = 2, detailMessage = Unknown catalog 'hive'"}`))
	f.Add(200, []byte(`{"code":null}`))
	f.Add(401, []byte(`denied`))
	f.Add(503, []byte{0xff, 0xfe})
	f.Add(204, []byte(nil))
	f.Add(400, []byte(`{"error":"bad","rejected":[{"index":0,"error":"bad serde"},{"index":1}]}`))
	f.Add(422, []byte(`{"error":"bad","rejected":[{"index":2},{"index":2},{"index":0}]}`))
	f.Add(400, []byte(`{"error":"bad","rejected":[{"index":3}]}`))
	f.Add(409, []byte(`{"rejected":[{"index":-1}]}`))
	f.Add(400, []byte(`{"rejected":[{"index":1e400}]}`))
	f.Add(400, []byte(`{"rejected":null}`))
	var mu sync.Mutex
	var status int
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		s, b := status, body
		mu.Unlock()
		w.WriteHeader(s)
		_, _ = w.Write(b)
	}))
	f.Cleanup(srv.Close)
	var appliers []Applier
	for _, d := range []string{DialectDoris, DialectNative} {
		a, err := New(Config{Dialect: d, URL: srv.URL, User: "root", Timeout: 2 * time.Second})
		if err != nil {
			f.Fatal(err)
		}
		appliers = append(appliers, a)
	}
	batch := change.Batch{Catalog: "hive", From: 1, To: 4, Changes: []change.Descriptor{
		{EventID: 2, Op: change.RefreshTable, DB: "d", Table: "t"},
		{EventID: 3, Op: change.RenameTable, DB: "d", Table: "a", DBAfter: "e", TableAfter: "b"},
		{EventID: 4, Op: change.RefreshDatabase, DB: "f"},
	}}
	allowed := map[change.Object]bool{}
	for _, d := range batch.Changes {
		for _, o := range d.Objects() {
			allowed[o], allowed[change.Object{DB: o.DB}] = true, true
		}
	}
	f.Fuzz(func(t *testing.T, code int, answer []byte) {
		if code < 200 || code > 599 {
			code = 200 + (code%400+400)%400 // net/http accepts only 1xx-5xx; 1xx are not final answers
		}
		mu.Lock()
		status, body = code, answer
		mu.Unlock()
		for _, a := range appliers {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			err := a.Apply(ctx, batch)
			cancel()
			var ae *Error
			if err != nil && !errors.As(err, &ae) {
				t.Fatalf("%s: answer %d %q: error %v is not an *applier.Error", a.Dialect(), code, answer, err)
			}
			if ae == nil {
				continue
			}
			if len(ae.Objects) > maxRejectedObjects {
				t.Fatalf("%s: answer %d %q: %d objects", a.Dialect(), code, answer, len(ae.Objects))
			}
			seen := map[change.Object]bool{}
			for _, o := range ae.Objects {
				if !allowed[o] || seen[o] {
					t.Fatalf("%s: answer %d %q: objects %v name %v, not an object of the batch once", a.Dialect(), code, answer, ae.Objects, o)
				}
				seen[o] = true
			}
		}
	})
}
