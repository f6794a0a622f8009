package agent

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves SPEC §7's operating surface. level, when not nil, is exposed on
// /log/level (GET to read, PUT {"level":"debug"} to change; see LogLevel).
func (a *Agent) Handler(level *LogLevel) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, r *http.Request) {
		// Never checks etcd: an etcd outage must not get every sidecar killed.
		if why := a.stuck(); len(why) > 0 {
			http.Error(w, "stuck: "+strings.Join(why, "; "), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if why := a.notReady(); len(why) > 0 {
			http.Error(w, "not ready: "+strings.Join(why, "; "), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/master", func(w http.ResponseWriter, r *http.Request) {
		if _, master := a.cfg.Elector.Current(); master {
			_, _ = w.Write([]byte("master\n"))
			return
		}
		http.Error(w, "not master", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/replica", func(w http.ResponseWriter, r *http.Request) {
		if _, master := a.cfg.Elector.Current(); !master {
			_, _ = w.Write([]byte("replica\n"))
			return
		}
		http.Error(w, "master", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(a.Status())
	})
	mux.HandleFunc("/v1/wait", a.serveWait)
	mux.Handle("/metrics", promhttp.HandlerFor(a.m.reg, promhttp.HandlerOpts{}))
	if level != nil {
		mux.Handle("/log/level", level)
	}
	return mux
}
