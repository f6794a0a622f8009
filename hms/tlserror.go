package hms

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/thrift/lib/go/thrift"
)

// handshakeError is a failed TLS handshake with a metastore, with what to check.
// The configuration names are those of the sidecar (hms_tls.*) and of
// `hmssync events tail` (--tls-*), the two ways a user reaches ClientConfig.TLS.
type handshakeError struct {
	serverName string
	err        error
	hint       string
}

func (e *handshakeError) Error() string {
	return fmt.Sprintf("TLS handshake (server name %q): %v; %s", e.serverName, e.err, e.hint)
}

func (e *handshakeError) Unwrap() error { return e.err }

func newHandshakeError(serverName string, err error) error {
	var (
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		header  tls.RecordHeaderError
	)
	hint := "check the metastore's TLS settings (hive.metastore.use.SSL, its keystore) against hms_tls"
	switch {
	case errors.As(err, &unknown):
		hint = "the metastore's certificate is not signed by a CA this client trusts: " +
			"check that hms_tls.ca_file (events tail: --tls-ca) holds the CA that signed it"
	case errors.As(err, &host):
		hint = "the metastore's certificate is not valid for that name: connect by a name the certificate lists, " +
			"or set hms_tls.server_name (--tls-server-name) to one"
	case errors.As(err, &invalid):
		hint = "the metastore's certificate is unusable (expired, not yet valid or not for servers): renew it"
	case errors.As(err, &header):
		hint = "the metastore does not answer in TLS: remove hms_tls (--tls*), or enable hive.metastore.use.SSL on the metastore"
	case errors.Is(err, io.EOF), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		// A plain metastore reads the ClientHello as a Thrift message: it
		// either closes the connection or waits for the rest of a huge one.
		hint = "the metastore closed the connection or did not answer during the handshake: check that it speaks TLS (hive.metastore.use.SSL)"
	}
	return &handshakeError{serverName: serverName, err: err, hint: hint}
}

// withTransportHint explains a connection that broke on its very first call
// with a protocol error or a close: that is how a transport that does not match
// the metastore's shows (a plain client reading a TLS alert, a buffered client
// writing to a framed server). Timeouts are left alone: they have other causes.
func withTransportHint(err error) error {
	var te thrift.TException
	if errors.Is(err, os.ErrDeadlineExceeded) || (!errors.As(err, &te) && !errors.Is(err, io.EOF)) {
		return err
	}
	return fmt.Errorf("%w; the connection broke on its first call: if it keeps doing so, check that hms_tls and hms_framed "+
		"match the metastore (hive.metastore.use.SSL, hive.metastore.thrift.framed.transport.enabled)", err)
}

// attemptErrors are the failures of one walk over the URIs, one per URI. They
// print as one line and unwrap to each, so that callers can still inspect the
// causes (errors.As finds a certificate error behind them).
type attemptErrors []error

func (e attemptErrors) Error() string {
	parts := make([]string, len(e))
	for i, err := range e {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func (e attemptErrors) Unwrap() []error { return e }
