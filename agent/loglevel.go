package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// LogLevel is the /log/level endpoint: GET reads the level, PUT changes it.
// Changing the level is a change of state on a port that is open on every
// interface of the pod (probes and Prometheus reach it on the pod's address),
// so by default only a client on loopback may change it.
type LogLevel struct {
	Level *zap.AtomicLevel
	// AllowRemote lets clients that are not on loopback change the level
	// (http.allow_remote_log_level).
	AllowRemote bool
}

// maxLogLevelBody bounds a PUT's body: {"level":"debug"} is 17 bytes. (Without
// the bound, a 256 MiB body takes a sidecar from 36 MB to 2.1 GB and is echoed
// back.)
const maxLogLevelBody = 1 << 10

// settableLevels are the levels an operator may set. fatal, panic and dpanic
// would silence every error log (and zap's dpanic/panic levels exist to crash
// a process), so they are refused.
var settableLevels = map[string]zapcore.Level{
	"debug": zapcore.DebugLevel, "info": zapcore.InfoLevel, "warn": zapcore.WarnLevel, "error": zapcore.ErrorLevel,
}

func (l *LogLevel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut:
		if !l.AllowRemote && !fromLoopback(r) {
			http.Error(w, "the log level may be changed only from loopback (set http.allow_remote_log_level to allow other clients)", http.StatusForbidden)
			return
		}
		name, err := readLevel(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		l.Level.SetLevel(settableLevels[name])
	default:
		w.Header().Set("Allow", "GET, PUT")
		http.Error(w, "want GET or PUT", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Level string `json:"level"`
	}{l.Level.Level().String()})
}

// readLevel reads {"level":"debug"}, whatever the request's content type says
// (curl -d sends JSON as a form), or the form level=debug.
func readLevel(w http.ResponseWriter, r *http.Request) (string, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLogLevelBody))
	if err != nil {
		return "", fmt.Errorf("reading the body (at most %d bytes): %v", maxLogLevelBody, err)
	}
	var req struct {
		Level string `json:"level"`
	}
	if jerr := json.Unmarshal(body, &req); jerr != nil {
		form, ferr := url.ParseQuery(strings.TrimSpace(string(body)))
		if ferr != nil || form.Get("level") == "" {
			return "", fmt.Errorf(`want a body {"level":"debug"} (or level=debug): %v`, jerr)
		}
		req.Level = form.Get("level")
	}
	name := strings.ToLower(strings.TrimSpace(req.Level))
	if _, ok := settableLevels[name]; !ok {
		return "", fmt.Errorf("level %q: want debug, info, warn or error", shorten(req.Level, 32))
	}
	return name, nil
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// shorten keeps text from a wire at most n bytes (and valid UTF-8 where it
// was), marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
