package applier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/hmssync/hmssync/change"
	"go.uber.org/zap"
)

// NativeVersion is the version of the native protocol this applier speaks; it is
// part of every path (docs/fe-protocol.md).
const NativeVersion = 1

const nativePrefix = "/api/hmssync/v1"

// Native posts each batch, as it is, to the FE's per-FE cache endpoint
// (docs/fe-protocol.md). The FE is idempotent on to_event_id, so a retry never
// applies a change twice.
type Native struct {
	c Config
}

func newNative(c Config) *Native { return &Native{c: c} }

func (*Native) Dialect() string { return DialectNative }

// Scope is local unless forced: each FE has its own cache and its own sidecar.
func (n *Native) Scope() Scope { return scopeOr(n.c.Scope, ScopeLocal) }

// ChangesPath is the path a batch of catalog is posted to.
func ChangesPath(catalog string) string {
	return nativePrefix + "/catalogs/" + url.PathEscape(catalog) + "/changes"
}

// StatePath is the path that reports what the FE applied for catalog.
func StatePath(catalog string) string {
	return nativePrefix + "/catalogs/" + url.PathEscape(catalog) + "/state"
}

// PingPath is the path of the health and authentication probe.
const PingPath = nativePrefix + "/ping"

// NativeState is the FE's answer on StatePath and after a batch.
type NativeState struct {
	Catalog string `json:"catalog"`
	// AppliedEventID is the to_event_id of the last batch the FE applied for
	// the catalog; -1 when it has applied none since it started.
	AppliedEventID int64 `json:"applied_event_id"`
}

// Apply posts b. 2xx means applied (or already applied); 401 and 403 are Auth;
// 404 is Configuration (the FE does not know the catalog, or does not serve the
// protocol: applying it again, or a full refresh, would get the same answer);
// 408, 429, 5xx and network failures Transient; other 4xx Deterministic. When a
// 4xx answer names the items the FE rejected, the *Error's Objects are what
// those items concern (rejectedObjects).
func (n *Native) Apply(ctx context.Context, b change.Batch) error {
	path := ChangesPath(b.Catalog)
	what := fmt.Sprintf("POST %s events (%d, %d]", path, b.From, b.To)
	if err := checkBatch(b); err != nil {
		return n.fail(Deterministic, what, err)
	}
	if b.Changes == nil {
		b.Changes = []change.Descriptor{} // "changes": [] rather than null
	}
	body, err := json.Marshal(b)
	if err != nil {
		return n.fail(Deterministic, what, err)
	}
	start := time.Now()
	raw, status, err := n.do(ctx, http.MethodPost, path, body)
	if errors.Is(err, errNotFound) {
		err = &Error{Class: Configuration, Err: fmt.Errorf("the FE does not know catalog %q (create it on the FE, or fix catalogs[].name), or does not serve the hmssync native protocol v%d (use fe.dialect doris?): %w", b.Catalog, NativeVersion, err)}
	}
	observe(ctx, b.Catalog, err)
	if err != nil {
		n.c.Logger.Debug("fe batch failed", zap.String("fe", n.c.URL), zap.String("request", what),
			zap.Int("changes", len(b.Changes)), zap.Duration("duration", time.Since(start)), zap.Error(err))
		e := n.fail(ClassOf(err), what, err)
		if status >= 400 && status < 500 {
			e.Objects = rejectedObjects(raw, b.Changes)
		}
		return e
	}
	n.c.Logger.Debug("fe batch", zap.String("fe", n.c.URL), zap.String("request", what),
		zap.Int("changes", len(b.Changes)), zap.Bool("full_refresh", b.FullRefresh), zap.Duration("duration", time.Since(start)))
	return nil
}

// Check calls the ping endpoint, which authenticates like every other call, and
// verifies that the FE speaks this protocol version. A 404 means the FE does not
// implement the protocol: a configuration error.
func (n *Native) Check(ctx context.Context) error {
	raw, _, err := n.do(ctx, http.MethodGet, PingPath, nil)
	if err != nil {
		if errors.Is(err, errNotFound) {
			return n.fail(Configuration, "GET "+PingPath, fmt.Errorf("the FE does not implement the hmssync native protocol v%d (use fe.dialect doris?): %w", NativeVersion, err))
		}
		return n.fail(ClassOf(err), "GET "+PingPath, err)
	}
	var ping struct {
		Versions []int `json:"versions"`
	}
	if err := json.Unmarshal(raw, &ping); err != nil || !slices.Contains(ping.Versions, NativeVersion) {
		return n.fail(Configuration, "GET "+PingPath, fmt.Errorf("the FE does not offer native protocol v%d: %s", NativeVersion, excerpt(raw)))
	}
	return nil
}

// AppliedEventID asks the FE which event it last applied for catalog (-1: none).
func (n *Native) AppliedEventID(ctx context.Context, catalog string) (int64, error) {
	path := StatePath(catalog)
	raw, _, err := n.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, n.fail(ClassOf(err), "GET "+path, err)
	}
	var st NativeState
	if err := json.Unmarshal(raw, &st); err != nil {
		return 0, n.fail(Deterministic, "GET "+path, fmt.Errorf("unreadable answer: %w: %s", err, excerpt(raw)))
	}
	return st.AppliedEventID, nil
}

// errNotFound marks a 404, which Check reads differently from Apply.
var errNotFound = errors.New("HTTP 404")

// do performs one request and returns the answer's body (read within
// maxResponse) and status, 0 when there was no answer. A status other than 2xx
// is also an *Error whose Class follows the status.
func (n *Native) do(ctx context.Context, method, path string, body []byte) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, n.c.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.c.URL+path, rd)
	if err != nil {
		return nil, 0, &Error{Class: Configuration, Err: fmt.Errorf("building the request to %s (check fe.url): %w", n.c.URL+path, err)}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(n.c.User, n.c.Password)
	resp, err := n.c.Client.Do(req)
	if err != nil {
		return nil, 0, &Error{Class: Transient, Err: fmt.Errorf("%w (is the FE up?)", err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, resp.StatusCode, &Error{Class: Transient, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return raw, code, nil
	}
	msg := nativeErrorText(raw)
	switch {
	case code == http.StatusNotFound:
		return raw, code, &Error{Class: Configuration, Err: fmt.Errorf("%w: %s", errNotFound, msg)}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return raw, code, &Error{Class: Auth, Err: fmt.Errorf("HTTP %d (check fe.user, the FE password and its privileges): %s", code, msg)}
	}
	return raw, code, &Error{Class: statusClass(code), Err: fmt.Errorf("HTTP %d: %s", code, msg)}
}

func (n *Native) fail(c Class, what string, err error) *Error {
	if e, ok := err.(*Error); ok {
		err = e.Err // keep one layer: the outer Error names FE and request
	}
	return &Error{Class: c, Dialect: DialectNative, FE: n.c.URL, Statement: what, Err: err}
}

// nativeErrorText extracts {"error": ...} from an answer, or an excerpt of it.
func nativeErrorText(raw []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		return excerpt([]byte(e.Error))
	}
	return excerpt(raw)
}

// maxRejectedObjects bounds the objects kept from one answer: enough to heal
// the tables of a batch one by one, small enough to log and report whole.
const maxRejectedObjects = 100

// rejectedObjects reads the items a refusing FE names (docs/fe-protocol.md §3):
// {"error": "...", "rejected": [{"index": N, "error": "..."}]}, N a 0-based index
// into changes. It returns the objects those items concern, without repeats,
// in the order the answer names them, at most maxRejectedObjects. An answer
// that is not that JSON, names no item, or names an index the batch does not
// have says nothing the sidecar can trust: nil.
func rejectedObjects(raw []byte, changes []change.Descriptor) []change.Object {
	var answer struct {
		Rejected []struct {
			Index *int `json:"index"`
		} `json:"rejected"`
	}
	if json.Unmarshal(raw, &answer) != nil {
		return nil
	}
	for _, r := range answer.Rejected {
		if r.Index == nil || *r.Index < 0 || *r.Index >= len(changes) {
			return nil
		}
	}
	var out []change.Object
	seen := map[change.Object]bool{}
	for _, r := range answer.Rejected {
		for _, o := range changes[*r.Index].Objects() {
			if seen[o] {
				continue
			}
			if len(out) == maxRejectedObjects {
				return out
			}
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}
