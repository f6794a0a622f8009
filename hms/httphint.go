package hms

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"strings"
)

// httpReplyHint recognises a reply in HTTP (head: a connection's first bytes
// read, netTransport.head) to a connection's first call: the URI names a web
// server's port, not the metastore's Thrift port. It returns nil otherwise.
func httpReplyHint(head []byte, uri string) error {
	if !bytes.HasPrefix(head, []byte("HTTP/")) {
		return nil
	}
	line := head
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	return notThriftError(uri, string(line))
}

func notThriftError(uri, status string) error {
	return configErrorf("not a Thrift metastore at %s: it answers HTTP (%q); check the port (the metastore's Thrift port, hive.metastore.port, is 9083 by default)", uri, status)
}

// ProbeHTTP asks uri (thrift://host:port; over TLS when tlsCfg is set) with a
// plain HTTP request whether it is a web server, within ctx. It is for a URI
// that did not answer a Thrift call at all, as a web server does not (it waits
// for the end of a request line that a Thrift message never sends), and must
// not be sent to a metastore that answers, which would log the request as a
// bad frame. It returns the error saying so when the answer is HTTP, else nil.
func ProbeHTTP(ctx context.Context, uri string, tlsCfg *tls.Config) error {
	addr, err := ParseURI(uri)
	if err != nil {
		return nil
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer nc.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	}
	if tlsCfg != nil {
		tc := tlsCfg.Clone()
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(addr)
		}
		t := tls.Client(nc, tc)
		if t.HandshakeContext(ctx) != nil {
			return nil
		}
		nc = t
	}
	host, _, _ := net.SplitHostPort(addr)
	if _, err := nc.Write([]byte("HEAD / HTTP/1.0\r\nHost: " + host + "\r\n\r\n")); err != nil {
		return nil
	}
	// One line, at most 256 bytes: the status line is all that is needed.
	line, err := bufio.NewReaderSize(nc, 256).ReadSlice('\n')
	if err != nil && len(line) == 0 {
		return nil
	}
	if !bytes.HasPrefix(line, []byte("HTTP/")) {
		return nil
	}
	return notThriftError(strings.TrimSpace(uri), strings.TrimSpace(string(line)))
}
