package applier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hmssync/hmssync/change"
	"go.uber.org/zap"
)

// dorisQueryPath is Doris's SQL-over-HTTP endpoint (reference §2). The path's
// namespace and database only pick a session database that always exists; every
// name in our statements is fully qualified because the session catalog is the
// internal one.
const dorisQueryPath = "/api/query/default_cluster/information_schema"

// maxResponse bounds how much of an FE answer is read.
const maxResponse = 1 << 20

// checkStatement is what Check sends. SELECT 1 needs no privilege and touches no
// catalog, yet travels the same path as a REFRESH: HTTP, Basic auth, the SQL
// executor and the envelope. So it proves reachability and authentication
// without work for the FE or the metastore (GET /rest/v1/ha would demand the
// ADMIN privilege, which a sync user should not have).
const checkStatement = "SELECT 1"

// Doris applies batches as REFRESH statements through Doris's /api/query. It keeps
// at most one statement in flight: the FE runs HTTP SQL on a two-thread pool that
// rejects overflow (reference §2).
type Doris struct {
	c        Config
	endpoint string
	// slot holds a token while a statement is in flight; a channel rather than
	// a mutex so that waiting for it respects the caller's context.
	slot chan struct{}
}

func newDoris(c Config) *Doris {
	return &Doris{c: c, endpoint: c.URL + dorisQueryPath, slot: make(chan struct{}, 1)}
}

func (*Doris) Dialect() string { return DialectDoris }

// Scope is cluster unless forced: Doris replays a REFRESH on every FE.
func (d *Doris) Scope() Scope { return scopeOr(d.c.Scope, ScopeCluster) }

// Apply sends DorisStatements(b.Catalog, b) one after the other and stops at the
// first failure, whose *Error names the objects the statement concerns.
// REFRESH is idempotent, so retrying the whole batch is safe.
func (d *Doris) Apply(ctx context.Context, b change.Batch) error {
	if err := checkBatch(b); err != nil {
		return &Error{Class: Deterministic, Dialect: DialectDoris, FE: d.c.URL, Err: fmt.Errorf("batch (%d, %d] of catalog %q: %w", b.From, b.To, b.Catalog, err)}
	}
	for _, stmt := range dorisStatements(b.Catalog, b) {
		err := d.exec(ctx, stmt.sql)
		observe(ctx, b.Catalog, err)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Objects = stmt.objects
			}
			return err
		}
	}
	return nil
}

// Check runs checkStatement, unless a statement is in flight: that statement
// is proof enough that the FE answers (its own failure, if any, is reported by
// Apply), and waiting for the single slot would make a REFRESH longer than the
// health check's timeout fail the check, and a healthy master resign.
func (d *Doris) Check(ctx context.Context) error {
	select {
	case d.slot <- struct{}{}:
	default:
		return nil
	}
	defer func() { <-d.slot }()
	return d.run(ctx, checkStatement)
}

// exec sends one statement and classifies the answer.
func (d *Doris) exec(ctx context.Context, stmt string) error {
	select {
	case d.slot <- struct{}{}:
	case <-ctx.Done():
		return d.fail(Transient, stmt, fmt.Errorf("waiting for the statement in flight: %w", ctx.Err()))
	}
	defer func() { <-d.slot }()
	return d.run(ctx, stmt)
}

// run sends one statement while holding the slot, and logs it.
func (d *Doris) run(ctx context.Context, stmt string) error {
	start := time.Now()
	err := d.send(ctx, stmt)
	elapsed := time.Since(start)
	if err != nil {
		d.c.Logger.Debug("fe statement failed", zap.String("fe", d.c.URL), zap.String("stmt", stmt),
			zap.Duration("duration", elapsed), zap.Stringer("class", ClassOf(err)), zap.Error(err))
		return err
	}
	d.c.Logger.Debug("fe statement", zap.String("fe", d.c.URL), zap.String("stmt", stmt), zap.Duration("duration", elapsed))
	return nil
}

func (d *Doris) send(ctx context.Context, stmt string) error {
	ctx, cancel := context.WithTimeout(ctx, d.c.Timeout)
	defer cancel()
	body, err := json.Marshal(map[string]string{"stmt": stmt})
	if err != nil {
		return d.fail(Deterministic, stmt, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.endpoint, bytes.NewReader(body))
	if err != nil {
		return d.fail(Configuration, stmt, fmt.Errorf("building the request to %s (check fe.url): %w", d.endpoint, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Doris-Stream", "false")
	req.SetBasicAuth(d.c.User, d.c.Password)
	resp, err := d.c.Client.Do(req)
	if err != nil {
		return d.fail(Transient, stmt, fmt.Errorf("POST %s: %w (is the FE up?)", dorisQueryPath, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return d.fail(Transient, stmt, fmt.Errorf("reading the answer: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		return d.fail(httpStatusClass(resp.StatusCode), stmt, fmt.Errorf("HTTP %s: %s", resp.Status, excerpt(raw)))
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil || env.Code == nil {
		return d.fail(Configuration, stmt, fmt.Errorf("the answer is not a Doris envelope (is fe.url a Doris FE's HTTP port?): %s", excerpt(raw)))
	}
	class, err := env.outcome(strings.HasPrefix(stmt, "REFRESH CATALOG "))
	if err != nil {
		return d.fail(class, stmt, err)
	}
	return nil
}

func (d *Doris) fail(c Class, stmt string, err error) error {
	return &Error{Class: c, Dialect: DialectDoris, FE: d.c.URL, Statement: stmt, Err: err}
}

// httpStatusClass classifies an HTTP status other than 200. Doris answers 200
// even for failed statements, so these come from the server itself or a proxy.
func httpStatusClass(status int) Class {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return Auth
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return Configuration // a URL that is not a Doris FE's HTTP port
	}
	return statusClass(status)
}

// statusClass is the class of an HTTP status that says nothing specific to a
// dialect: 408 (request timeout) and 429 (too many requests) are the server
// asking to be called again later, like a 5xx; other 4xx are refusals that a
// retry will not change.
func statusClass(status int) Class {
	switch {
	case status >= 500, status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return Transient
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return Auth
	}
	return Deterministic
}

// envelope is Doris's answer: {"msg":..,"code":..,"data":..,"count":..}.
type envelope struct {
	Msg  string          `json:"msg"`
	Code *int            `json:"code"`
	Data json.RawMessage `json:"data"`
}

// outcome classifies the envelope (reference §2): a nil error is success.
//
// "Does not exist" is success for a database or table: it was dropped after the
// event, so there is nothing left to refresh. A missing catalog is different:
// the FE lacks a catalog hmssync is configured for, a configuration error that a
// full refresh cannot fix.
func (e envelope) outcome(catalogStatement bool) (Class, error) {
	text := e.dataText()
	missing := missingObject(text)
	missingCatalog := missing == "catalog" || (missing != "" && catalogStatement)
	switch *e.Code {
	case 0:
		if e.dataIsExecResult() {
			return 0, nil
		}
		// Some errors escape with code 0 and a plain string in data.
		if missing != "" && !missingCatalog {
			return 0, nil
		}
		return Deterministic, fmt.Errorf("code 0 without a result object (an escaped error): %s", text)
	case 1:
		switch {
		case missingCatalog:
			return Configuration, fmt.Errorf("the catalog does not exist on the FE (create it, or fix catalogs[].name): %s", text)
		case missing != "":
			return 0, nil
		case accessDenied(text):
			return Auth, fmt.Errorf("access denied (grant fe.user SHOW on the catalog): %s", text)
		}
		return Deterministic, fmt.Errorf("statement rejected: %s", text)
	case 401:
		return Auth, fmt.Errorf("unauthorized (check fe.user and the FE password): %s", text)
	case 500, 503:
		return Transient, fmt.Errorf("FE error code %d: %s", *e.Code, text)
	}
	return Deterministic, fmt.Errorf("FE error code %d (%s): %s", *e.Code, e.Msg, text)
}

// dataIsExecResult reports whether data is an object with a "type" (exec_status
// for REFRESH, result_set for SELECT).
func (e envelope) dataIsExecResult() bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(e.Data, &obj) != nil || obj == nil {
		return false
	}
	var typ string
	return json.Unmarshal(obj["type"], &typ) == nil && typ != ""
}

func (e envelope) dataText() string {
	var s string
	if json.Unmarshal(e.Data, &s) == nil {
		return excerpt([]byte(s))
	}
	return excerpt(e.Data)
}

// missingObject recognises Doris's "does not exist" answers and says what is
// missing: "catalog", "database", "table", or "object" when the message does
// not say. It returns "" for any other message. The subject of the message is
// the first object word in it ("Table t does not exist in database d"); the
// words are matched whole so that a name like my_catalog does not count.
func missingObject(text string) string {
	t := strings.ToLower(text)
	for _, kind := range []string{"catalog", "database", "table"} {
		if strings.Contains(t, "unknown "+kind) {
			return kind
		}
	}
	i := strings.Index(t, "does not exist")
	if j := strings.Index(t, "doesn't exist"); i < 0 || (j >= 0 && j < i) {
		i = j
	}
	if i < 0 {
		return ""
	}
	for _, w := range strings.FieldsFunc(t[:i], func(r rune) bool { return !isWordRune(r) }) {
		switch w {
		case "catalog", "database", "table":
			return w
		case "db":
			return "database"
		}
	}
	return "object"
}

func isWordRune(r rune) bool {
	return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 0x7f
}

func accessDenied(text string) bool {
	return strings.Contains(strings.ToLower(text), "access denied")
}

// excerpt keeps error messages readable when an FE answers with a page of HTML.
func excerpt(b []byte) string {
	const max = 512
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
