package agent

import (
	"net/http"
	"net/http/pprof"
)

// Profiling on the HTTP surface (SPEC §7: an opt-in /debug/pprof). A profile
// shows the process's internals (goroutine stacks name the catalogs and the
// addresses it talks to) and a CPU profile or trace costs CPU for as long as it
// runs, so the endpoints are off unless configured, and by default answer only
// clients on the loopback interface (a shell on the host, kubectl
// port-forward). The handlers are net/http/pprof's; importing that package
// also registers them on http.DefaultServeMux, which hmssync never serves.

// PprofAccess says who may read /debug/pprof.
type PprofAccess string

const (
	// PprofOff serves no profiles: /debug/pprof is not found (the default).
	PprofOff PprofAccess = "off"
	// PprofLoopback serves profiles to clients connecting from a loopback
	// address only; others get 403.
	PprofLoopback PprofAccess = "loopback"
	// PprofAny serves profiles to every client that can reach the listener.
	PprofAny PprofAccess = "any"
)

// WithPprof returns h with /debug/pprof/ served in front of it as access
// allows; with PprofOff (or any other value) it returns h itself.
//
// A CPU profile or trace takes its ?seconds= (default 30 s) to answer: a
// server write timeout shorter than that makes net/http/pprof refuse it.
func WithPprof(h http.Handler, access PprofAccess) http.Handler {
	if access != PprofLoopback && access != PprofAny {
		return h
	}
	prof := http.NewServeMux()
	prof.HandleFunc("/debug/pprof/", pprof.Index) // also the named profiles: heap, goroutine, allocs, …
	prof.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	prof.HandleFunc("/debug/pprof/profile", pprof.Profile)
	prof.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	prof.HandleFunc("/debug/pprof/trace", pprof.Trace)
	var served http.Handler = prof
	if access == PprofLoopback {
		served = loopbackOnly(prof)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/", served)
	mux.Handle("/", h)
	return mux
}

// loopbackOnly answers 403 to a request whose connection does not come from a
// loopback address. It looks at the connection's own address, never at
// headers a client or proxy could set (X-Forwarded-For): a proxy on the same
// host is trusted exactly as far as the host is.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fromLoopback(r) {
			http.Error(w, "forbidden: /debug/pprof answers loopback clients only (http.pprof: loopback)", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
