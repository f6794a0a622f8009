package hms

import (
	"context"
	"net"
	"time"

	"github.com/hmssync/hmssync/hms/internal/sasl"
)

// negotiateSASL authenticates a new connection to the metastore at addr with
// Kerberos, within ctx's deadline, and returns the transport for its calls and
// the QOP negotiated (auth or auth-int).
func negotiateSASL(ctx context.Context, nt *netTransport, addr, uri string, krb *kerberos) (*sasl.Transport, string, error) {
	host, _, _ := net.SplitHostPort(addr)
	mech, err := krb.mechanism(host)
	if err != nil {
		return nil, "", err
	}
	if d, ok := ctx.Deadline(); ok {
		if err := nt.nc.SetDeadline(d); err != nil {
			return nil, "", err
		}
	}
	stop := context.AfterFunc(ctx, func() { nt.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	tr := sasl.NewTransport(nt, sasl.Limits{Data: uint32(thriftConfig.MaxFrameSize)})
	if err := tr.Negotiate(mech); err != nil {
		// A ticket the metastore refused may have expired there (or the
		// KDC's keys changed): the next connection starts from a fresh login.
		krb.relogin()
		return nil, "", krb.negotiationError(uri, krb.servicePrincipal(host), err)
	}
	if mech.Layer() != nil {
		return tr, "auth-int", nil
	}
	return tr, "auth", nil
}
