// Package sasltest is the server side of Thrift's SASL transport with a
// Kerberos GSSAPI acceptor, for tests: what a Kerberized metastore does on
// accepting a connection. It verifies the client's AP-REQ with the service's
// keytab (gokrb5's service side), answers with an AP-REP that can assert an
// acceptor subkey (as MIT's acceptor always does), offers the security layers
// it is told to, and checks every wrap token the client sends with the key
// RFC 4121 prescribes, so that a client using the wrong key fails.
package sasltest

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Security layers (RFC 4752 §3.3).
const (
	LayerNone      = 1
	LayerIntegrity = 2
	LayerPrivacy   = 4
)

// Acceptor is the server side of the GSSAPI mechanism.
type Acceptor struct {
	// Keytab holds the service principal's keys.
	Keytab *keytab.Keytab
	// Subkey makes the AP-REP assert a fresh acceptor subkey, which the client
	// must then use for its wrap tokens.
	Subkey bool
	// Layers is the bit mask of security layers offered; default LayerNone.
	Layers byte
	// MaxSize is the largest wrapped frame the server accepts (auth-int).
	MaxSize uint32
	// SealOffer marks the offer's wrap token as sealed (confidential), as a
	// server that wraps with privacy would.
	SealOffer bool
	// CloseOnInvalid closes the connection on a frame with an invalid status
	// without the ERROR frame Thrift's Java transport documents, as a Hive 4.0
	// metastore does with a plain client's first call.
	CloseOnInvalid bool
}

// Context is an established server-side context.
type Context struct {
	// Client is the authenticated client principal, name@REALM.
	Client string
	// Layer is the layer the client chose.
	Layer byte
	// Subkey reports whether the wrap tokens use the acceptor's subkey.
	Subkey bool

	key     types.EncryptionKey
	sendSeq uint64
}

// status bytes of the negotiation frames.
const (
	stStart    = 1
	stOK       = 2
	stBad      = 3
	stError    = 4
	stComplete = 5
)

// Negotiate runs the server side of the negotiation on rw. A client it refuses
// gets a BAD frame naming why, as a Java metastore sends.
func (a *Acceptor) Negotiate(rw io.ReadWriter) (*Context, error) {
	ctx, err := a.negotiate(rw)
	if err != nil {
		var refused *refusal
		if errors.As(err, &refused) && !(a.CloseOnInvalid && refused.status == stError) {
			_ = writeFrame(rw, refused.status, []byte(refused.msg))
		}
		return nil, err
	}
	return ctx, nil
}

// refusal is a failure the server tells the client about: BAD for a failed
// exchange, ERROR for a frame it cannot read, as Java's TSaslTransport does.
type refusal struct {
	status byte
	msg    string
}

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error {
	return &refusal{status: stBad, msg: fmt.Sprintf(format, args...)}
}

func (a *Acceptor) negotiate(rw io.ReadWriter) (*Context, error) {
	st, mech, err := readFrame(rw)
	if err != nil {
		return nil, err
	}
	if st != stStart || string(mech) != "GSSAPI" {
		return nil, refuse("expected START GSSAPI, got status %d mechanism %q", st, mech)
	}
	_, token, err := readFrame(rw)
	if err != nil {
		return nil, err
	}
	ctx, apRep, err := a.accept(token)
	if err != nil {
		return nil, err
	}
	if err := writeFrame(rw, stOK, apRep); err != nil {
		return nil, err
	}
	// The client has the AP-REP and answers with an empty response.
	if _, resp, err := readFrame(rw); err != nil {
		return nil, err
	} else if len(resp) != 0 {
		return nil, refuse("expected an empty response after the AP-REP, got %d bytes", len(resp))
	}
	layers := a.Layers
	if layers == 0 {
		layers = LayerNone
	}
	offer := make([]byte, 4)
	binary.BigEndian.PutUint32(offer, a.MaxSize&0xffffff)
	offer[0] = layers
	tok, err := ctx.wrap(offer, a.SealOffer)
	if err != nil {
		return nil, err
	}
	if err := writeFrame(rw, stOK, tok); err != nil {
		return nil, err
	}
	st, choiceTok, err := readFrame(rw)
	if err != nil {
		return nil, err
	}
	if st != stComplete {
		return nil, refuse("expected COMPLETE with the security-layer choice, got status %d", st)
	}
	choice, err := ctx.Unwrap(choiceTok)
	if err != nil {
		return nil, refuse("the security-layer choice: %v", err)
	}
	if len(choice) < 4 || choice[0]&layers == 0 || choice[0]&(choice[0]-1) != 0 {
		return nil, refuse("the client chose layer %v, not exactly one of %#x", choice, layers)
	}
	ctx.Layer = choice[0]
	if err := writeFrame(rw, stComplete, nil); err != nil {
		return nil, err
	}
	return ctx, nil
}

// accept verifies the initial context token and returns the AP-REP token.
func (a *Acceptor) accept(token []byte) (*Context, []byte, error) {
	var tok spnego.KRB5Token
	if err := tok.Unmarshal(token); err != nil || !tok.IsAPReq() {
		return nil, nil, refuse("not a Kerberos AP-REQ token: %v", err)
	}
	req := tok.APReq
	if ok, err := req.Verify(a.Keytab, 5*time.Minute, types.HostAddress{}, nil); !ok || err != nil {
		return nil, nil, refuse("GSS initiate failed: %v", err)
	}
	sessionKey := req.Ticket.DecryptedEncPart.Key
	ctx := &Context{
		Client: req.Authenticator.CName.PrincipalNameString() + "@" + req.Authenticator.CRealm,
		key:    sessionKey,
	}
	if req.Authenticator.SubKey.KeyType != 0 {
		ctx.key = req.Authenticator.SubKey
	}
	part := messages.EncAPRepPart{CTime: req.Authenticator.CTime, Cusec: req.Authenticator.Cusec, SequenceNumber: randomSeq()}
	if a.Subkey {
		et, err := crypto.GetEtype(sessionKey.KeyType)
		if err != nil {
			return nil, nil, err
		}
		sub, err := types.GenerateEncryptionKey(et)
		if err != nil {
			return nil, nil, err
		}
		part.Subkey, ctx.key, ctx.Subkey = sub, sub, true
	}
	ctx.sendSeq = uint64(part.SequenceNumber)
	plain, err := asn1.Marshal(part)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the AP-REP part: %w", err)
	}
	plain = asn1tools.AddASNAppTag(plain, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(plain, sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypting the AP-REP: %w", err)
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the AP-REP: %w", err)
	}
	rep = asn1tools.AddASNAppTag(rep, asnAppTag.APREP)
	oid, _ := asn1.Marshal(gssapi.OIDKRB5.OID())
	inner := append(append(oid, 0x02, 0x00), rep...)
	return ctx, asn1tools.AddASNAppTag(inner, 0), nil
}

func randomSeq() int64 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint32(b[:]) & 0x3fffffff)
}
