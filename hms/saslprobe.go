package hms

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/hmssync/hmssync/hms/internal/sasl"
)

// saslProbeHint explains a plain client's first call that the metastore
// answered by closing the connection, which is what a metastore requiring
// Kerberos does with a Thrift message it reads as a SASL frame: it asks the
// metastore, on a new connection, whether it speaks SASL, and if so returns
// the configuration error that says so. Otherwise it returns nil.
func (c *Client) saslProbeHint(ctx context.Context, addr string, callErr error) error {
	if c.krb != nil || !errors.Is(callErr, io.EOF) && !isConnReset(callErr) {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(pctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer nc.Close()
	deadline, _ := pctx.Deadline()
	_ = nc.SetDeadline(deadline)
	if c.cfg.TLS != nil {
		tc := c.cfg.TLS.Clone()
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(addr)
		}
		t := tls.Client(nc, tc)
		if t.HandshakeContext(pctx) != nil {
			return nil
		}
		nc = t
	}
	if !sasl.Probe(nc) {
		return nil
	}
	return configErrorf("the metastore closed the connection on the first call and answers SASL negotiation frames: it requires Kerberos " +
		"(hive.metastore.sasl.enabled=true); set hms_auth.mechanism: kerberos with its principal and a keytab (events tail: --auth kerberos)")
}

// isConnReset reports a connection the metastore reset.
func isConnReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
