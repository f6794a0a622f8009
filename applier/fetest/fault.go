package fetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Fault changes how an endpoint answers matching requests. Zero fields have no
// effect; a fault with only Delay slows requests down and then answers them
// normally. The first matching fault with uses left applies.
type Fault struct {
	// Match limits the fault to SQL statements (or native request paths) that
	// contain it; "" matches every request.
	Match string
	// Native limits the fault to the native endpoint, SQL to /api/query; with
	// neither set it applies to both.
	Native, SQL bool
	// Times is how many requests the fault affects; 0 means until cleared.
	Times int
	// Delay is waited before answering.
	Delay time.Duration
	// Hold, if set, is waited for (closed) after Delay and before answering:
	// a test holds a request in flight for exactly as long as it needs, with
	// no guess at how long that is. In-process only.
	Hold <-chan struct{}
	// HTTPStatus, if set, is the HTTP status of the answer (e.g. 503).
	HTTPStatus int
	// Code, if set, is the answer's envelope code on /api/query (1 SQL error,
	// 401, 403, 500, 503). On the native endpoint 401, 403, 500 and 503 become
	// that HTTP status and anything else 400.
	Code int
	// Message is the envelope's data (or the native error) for Code.
	Message string
	// NotExist answers Doris's "does not exist" error for the statement's
	// object (a catalog's is "Unknown catalog"). SQL only.
	NotExist bool
	// Body, if set, is answered verbatim with HTTP 200 (or HTTPStatus), for
	// answers no other field describes (code 0 with a string in data, say).
	Body string
	// RejectTable rejects one object: "db.table", or "db" for a database (as
	// change.Object's String writes it). On the native endpoint a batch with
	// any change whose Objects include it is answered 400 (or HTTPStatus)
	// naming those changes in "rejected", and nothing of it is applied; on
	// /api/query a statement concerning that object (REFRESH TABLE of the
	// table, REFRESH DATABASE of the database) is answered with code 1 and
	// Message or a "rejected" error. Requests that do not concern it are not
	// affected and do not use up Times.
	RejectTable string
	// Refuse stops the endpoint listening for this long (connection refused).
	// It takes effect after the answer to the request that set it (via POST
	// /_fetest/faults); in-process, call Down and Up instead.
	Refuse time.Duration
}

// faultJSON is Fault on the wire, durations as Go duration strings ("250ms").
type faultJSON struct {
	Match       string `json:"match,omitempty"`
	Native      bool   `json:"native,omitempty"`
	SQL         bool   `json:"sql,omitempty"`
	Times       int    `json:"times,omitempty"`
	Delay       string `json:"delay,omitempty"`
	HTTPStatus  int    `json:"http_status,omitempty"`
	Code        int    `json:"code,omitempty"`
	Message     string `json:"message,omitempty"`
	NotExist    bool   `json:"not_exist,omitempty"`
	Body        string `json:"body,omitempty"`
	RejectTable string `json:"reject_table,omitempty"`
	Refuse      string `json:"refuse,omitempty"`
}

// MarshalJSON writes durations as strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	j := faultJSON{Match: f.Match, Native: f.Native, SQL: f.SQL, Times: f.Times, HTTPStatus: f.HTTPStatus,
		Code: f.Code, Message: f.Message, NotExist: f.NotExist, Body: f.Body, RejectTable: f.RejectTable}
	if f.Delay != 0 {
		j.Delay = f.Delay.String()
	}
	if f.Refuse != 0 {
		j.Refuse = f.Refuse.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads durations as strings ("250ms") and rejects unknown keys,
// so that a typo in a test script fails loudly.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j faultJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	*f = Fault{Match: j.Match, Native: j.Native, SQL: j.SQL, Times: j.Times, HTTPStatus: j.HTTPStatus,
		Code: j.Code, Message: j.Message, NotExist: j.NotExist, Body: j.Body, RejectTable: j.RejectTable}
	var err error
	if j.Delay != "" {
		if f.Delay, err = time.ParseDuration(j.Delay); err != nil {
			return fmt.Errorf("delay: %w", err)
		}
	}
	if j.Refuse != "" {
		if f.Refuse, err = time.ParseDuration(j.Refuse); err != nil {
			return fmt.Errorf("refuse: %w", err)
		}
	}
	if f.Times < 0 || f.Delay < 0 || f.Refuse < 0 {
		return fmt.Errorf("times, delay and refuse must not be negative")
	}
	return nil
}

// faults is an endpoint's list of injected faults.
type faults struct {
	mu   sync.Mutex
	list []*Fault
}

func (fs *faults) add(f Fault) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.list = append(fs.list, &f)
}

func (fs *faults) clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.list = nil
}

func (fs *faults) snapshot() []Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]Fault, len(fs.list))
	for i, f := range fs.list {
		out[i] = *f
	}
	return out
}

// take returns the fault that applies to a request and uses it up once.
// concerns says whether the request concerns an object (a RejectTable value);
// nil for a request that concerns none.
func (fs *faults) take(native bool, subject string, concerns func(object string) bool) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.list {
		if (native && f.SQL && !f.Native) || (!native && f.Native && !f.SQL) {
			continue
		}
		if !strings.Contains(subject, f.Match) {
			continue
		}
		if f.RejectTable != "" && (concerns == nil || !concerns(f.RejectTable)) {
			continue
		}
		got := *f
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				fs.list = append(fs.list[:i:i], fs.list[i+1:]...)
			}
		}
		return got, true
	}
	return Fault{}, false
}
