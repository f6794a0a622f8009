package hmstest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hmssync/hmssync/hms/message"
)

// ControlHandler is the HTTP control API of `hmssync dev hms` (documented in
// docs/dev-servers.md):
//
//	POST   /events             append the NotificationEvent JSON lines of the body, atomically
//	GET    /events?after=N&max=M   the kept events after N as JSON lines
//	POST   /clean?before=N     drop events with ids below N (a gap)
//	POST   /reset?next=N       empty the log; the next event gets id N
//	POST   /faults             inject {"method","err","delay","drop","repeat","misreply","times"}
//	DELETE /faults             clear all faults
//	POST   /down, /up, /drop-connections
//	POST   /format?format=json|gzip|mixed
//	GET    /state              {"uri","up","tls","current_event_id","oldest_event_id","events"}
//	GET    /snapshot           database → table → sorted partition names
func (s *Server) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /events", s.postEvents)
	mux.HandleFunc("GET /events", s.getEvents)
	mux.HandleFunc("POST /clean", func(w http.ResponseWriter, r *http.Request) {
		n, ok := intParam(w, r, "before")
		if ok {
			s.Clean(n)
			s.writeState(w)
		}
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		n, ok := intParam(w, r, "next")
		if ok {
			s.Reset(n)
			s.writeState(w)
		}
	})
	mux.HandleFunc("POST /faults", s.postFault)
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		writeJSON(w, http.StatusOK, map[string]string{"faults": "cleared"})
	})
	mux.HandleFunc("POST /down", func(w http.ResponseWriter, r *http.Request) {
		s.Down()
		s.writeState(w)
	})
	mux.HandleFunc("POST /up", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Up(); err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
		s.writeState(w)
	})
	mux.HandleFunc("POST /drop-connections", func(w http.ResponseWriter, r *http.Request) {
		s.DropConnections()
		s.writeState(w)
	})
	mux.HandleFunc("POST /format", func(w http.ResponseWriter, r *http.Request) {
		f, ok := map[string]Format{"json": FormatJSON, "gzip": FormatGzip, "mixed": FormatMixed}[r.URL.Query().Get("format")]
		if !ok {
			httpError(w, http.StatusBadRequest, "format: want json, gzip or mixed")
			return
		}
		s.SetFormat(f)
		s.writeState(w)
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) { s.writeState(w) })
	mux.HandleFunc("GET /snapshot", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Snapshot())
	})
	return mux
}

// State is the body of GET /state.
type State struct {
	URI            string `json:"uri"`
	Up             bool   `json:"up"`
	TLS            bool   `json:"tls"`
	CurrentEventID int64  `json:"current_event_id"`
	OldestEventID  int64  `json:"oldest_event_id"`
	Events         int    `json:"events"`
}

// State reports the server's address and log.
func (s *Server) State() State {
	s.mu.Lock()
	up := s.ln != nil
	s.mu.Unlock()
	s.log.mu.Lock()
	n := len(s.log.events)
	s.log.mu.Unlock()
	return State{URI: s.URI(), Up: up, TLS: s.tlsConfig != nil, CurrentEventID: s.CurrentEventID(), OldestEventID: s.OldestEventID(), Events: n}
}

func (s *Server) writeState(w http.ResponseWriter) { writeJSON(w, http.StatusOK, s.State()) }

// maxEventsBody bounds POST /events.
const maxEventsBody = 256 << 20

func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) {
	sc := bufio.NewScanner(io.LimitReader(r.Body, maxEventsBody))
	sc.Buffer(nil, maxEventsBody)
	var evs []message.Event
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(trimSpace(b)) == 0 {
			continue
		}
		var e message.Event
		if err := json.Unmarshal(b, &e); err != nil {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("line %d: not a NotificationEvent JSON object: %v; nothing appended", line, err))
			return
		}
		if e.Type == "" {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("line %d: eventType is empty; nothing appended", line))
			return
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("reading body: %v; nothing appended", err))
		return
	}
	first, last := s.Append(evs...)
	writeJSON(w, http.StatusOK, map[string]int64{"first": first, "last": last, "count": int64(len(evs))})
}

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
	max, _ := strconv.Atoi(q.Get("max"))
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, e := range s.log.after(after, max, "", "") {
		if err := enc.Encode(e); err != nil {
			return
		}
	}
}

// faultRequest is the body of POST /faults; delay is a Go duration ("1.5s").
type faultRequest struct {
	Method   string `json:"method"`
	Err      string `json:"err"`
	Delay    string `json:"delay"`
	Drop     bool   `json:"drop"`
	Repeat   bool   `json:"repeat"`
	Misreply string `json:"misreply"`
	Times    int    `json:"times"`
}

func (s *Server) postFault(w http.ResponseWriter, r *http.Request) {
	var req faultRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "body: want {\"method\",\"err\",\"delay\",\"drop\",\"repeat\",\"misreply\",\"times\"}: "+err.Error())
		return
	}
	if req.Method == "" {
		httpError(w, http.StatusBadRequest, "method is empty; want a Thrift method name such as get_next_notification")
		return
	}
	if err := checkMisreply(req.Misreply); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	f := Fault{Err: req.Err, Drop: req.Drop, Repeat: req.Repeat, Misreply: req.Misreply, Times: req.Times}
	if req.Delay != "" {
		d, err := time.ParseDuration(req.Delay)
		if err != nil || d < 0 {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("delay %q: want a duration such as 1.5s", req.Delay))
			return
		}
		f.Delay = d
	}
	if f == (Fault{Times: f.Times}) {
		httpError(w, http.StatusBadRequest, "fault does nothing: set err, delay, drop, repeat or misreply")
		return
	}
	if f.Repeat && req.Method != repeatMethod {
		// Only the notification fetch has ids to repeat; accepting it elsewhere
		// would look like a fault that silently never fires.
		httpError(w, http.StatusBadRequest, fmt.Sprintf("repeat applies to %s only, not %q", repeatMethod, req.Method))
		return
	}
	s.InjectFault(req.Method, f)
	writeJSON(w, http.StatusOK, req)
}

func intParam(w http.ResponseWriter, r *http.Request, name string) (int64, bool) {
	n, err := strconv.ParseInt(r.URL.Query().Get(name), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("query parameter %s=%q: want an event id", name, r.URL.Query().Get(name)))
		return 0, false
	}
	return n, true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
