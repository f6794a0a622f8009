package agent

import (
	"net/http"
	"time"
)

// Time bounds of the HTTP surface. Without them a client sending one byte a
// second keeps a connection (and its goroutine) for ever. A scrape of /metrics
// or /status is milliseconds; the write bound leaves room for a slow reader.
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 10 * time.Second
	httpWriteTimeout      = 30 * time.Second
	httpIdleTimeout       = 60 * time.Second
	httpMaxHeaderBytes    = 16 << 10
)

// NewHTTPServer is the server of the operating surface h (from Handler), with
// every read and write bounded in time and the headers in size.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
	}
}
