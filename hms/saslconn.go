package hms

import (
	"context"
	"errors"
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
		if krb.refusedTicket(err) {
			// A ticket the metastore refused may have expired there (or the
			// KDC's keys changed): the next connection starts from a fresh login.
			krb.relogin()
		}
		return nil, "", krb.negotiationError(uri, krb.servicePrincipal(host), err)
	}
	if mech.Layer() != nil {
		return tr, "auth-int", nil
	}
	return tr, "auth", nil
}

// refusedTicket reports whether a failed negotiation is a refusal of the
// client's tickets, which a fresh login may cure: the metastore rejected the
// ticket (BAD, ERROR, a KRB-ERROR), or the KDC answered but would not give a
// service ticket. A connection that broke, a metastore that timed out or does
// not speak SASL, or a KDC that could not be reached is not: throwing the login
// away then would also throw away the cached tickets that let the client
// reconnect while the KDC is down.
func (k *kerberos) refusedTicket(err error) bool {
	var (
		se *sasl.ServerError
		ae *sasl.AcceptorError
		te *sasl.TicketError
	)
	switch {
	case errors.As(err, &se), errors.As(err, &ae):
		return true
	case errors.As(err, &te):
		return k.unreachableHint(err) == ""
	}
	return false
}
