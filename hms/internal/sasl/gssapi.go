package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// krb5OID is the DER encoding of the Kerberos V5 mechanism's OID
// 1.2.840.113554.1.2.2 (RFC 1964), which opens the initial context token.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// GSSAPI is the client side of the SASL GSSAPI mechanism (RFC 4752) with
// Kerberos V5, for one connection: the AP-REQ with mutual authentication, the
// acceptor's AP-REP (whose subkey, when it asserts one, keys the wrap tokens as
// RFC 4121 requires), and the security-layer exchange.
type GSSAPI struct {
	cl      *client.Client
	spn     string // the service principal without its realm, e.g. hive/host
	display string // the service principal as configured, for errors

	stage      int
	sessionKey types.EncryptionKey
	auth       types.Authenticator
	wrapper    *wrapper
	layer      Layer
}

// NewGSSAPI returns the mechanism for one connection to servicePrincipal
// (service/host@REALM, _HOST already replaced) with cl's credentials. cl must
// be logged in; it is not closed here.
func NewGSSAPI(cl *client.Client, servicePrincipal string) (*GSSAPI, error) {
	name, realm, _ := strings.Cut(servicePrincipal, "@")
	svc, host, ok := strings.Cut(name, "/")
	if !ok || svc == "" || host == "" || strings.Contains(host, "/") {
		return nil, fmt.Errorf("service principal %q: want service/host@REALM, e.g. hive/metastore.example.com@EXAMPLE.COM", servicePrincipal)
	}
	// gokrb5 finds the service's realm from the host ([domain_realm], else the
	// default realm): a different one in the principal would silently be ignored.
	if resolved := cl.Config.ResolveRealm(host); realm != "" && realm != resolved {
		return nil, fmt.Errorf("service principal %q: krb5.conf places host %s in realm %s, not %s; "+
			"add \"%s = %s\" under [domain_realm]", servicePrincipal, host, resolved, realm, host, realm)
	}
	return &GSSAPI{cl: cl, spn: name, display: servicePrincipal}, nil
}

// Name is "GSSAPI".
func (g *GSSAPI) Name() string { return "GSSAPI" }

// Layer is the negotiated security layer: nil for auth, the wrap tokens for auth-int.
func (g *GSSAPI) Layer() Layer { return g.layer }

// Start gets a service ticket and returns the initial context token with the AP-REQ.
func (g *GSSAPI) Start() ([]byte, error) {
	tkt, key, err := g.cl.GetServiceTicket(g.spn)
	if err != nil {
		return nil, &TicketError{Principal: g.display, Err: err}
	}
	auth, err := types.NewAuthenticator(g.cl.Credentials.Domain(), g.cl.Credentials.CName())
	if err != nil {
		return nil, fmt.Errorf("making the authenticator: %w", err)
	}
	auth.Cksum = types.Checksum{
		CksumType: chksumtype.GSSAPI,
		Checksum:  gssChecksum(gssapi.ContextFlagMutual | gssapi.ContextFlagInteg | gssapi.ContextFlagSequence),
	}
	apReq, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, fmt.Errorf("making the AP-REQ for %s: %w", g.display, err)
	}
	types.SetFlag(&apReq.APOptions, flags.APOptionMutualRequired)
	b, err := apReq.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encoding the AP-REQ for %s: %w", g.display, err)
	}
	g.sessionKey, g.auth = key, auth
	return contextToken([]byte{0x01, 0x00}, b), nil
}

// Step answers the AP-REP (with an empty response) and then the server's
// security-layer offer (with the wrapped choice, the last response).
func (g *GSSAPI) Step(challenge []byte) ([]byte, bool, error) {
	switch g.stage {
	case 0:
		w, err := g.acceptAPRep(challenge)
		if err != nil {
			return nil, false, err
		}
		g.wrapper, g.stage = w, 1
		return []byte{}, false, nil
	case 1:
		plain, err := g.wrapper.unwrap(challenge)
		if err != nil {
			return nil, false, fmt.Errorf("the server's security-layer offer: %w", err)
		}
		o, err := parseOffer(plain)
		if err != nil {
			return nil, false, err
		}
		layer, err := o.choose()
		if err != nil {
			return nil, false, err
		}
		resp, err := g.wrapper.wrap(choiceMessage(layer, ""))
		if err != nil {
			return nil, false, err
		}
		if layer == layerIntegrity {
			maxWrap := 0
			if o.maxSize > 0 {
				maxWrap = int(o.maxSize) - gssapi.HdrLen - g.wrapper.checksumLen
				if maxWrap <= 0 {
					return nil, false, fmt.Errorf("the server's maximum frame of %d bytes cannot hold a wrap token", o.maxSize)
				}
			}
			g.layer = &integrityLayer{w: g.wrapper, maxWrap: maxWrap}
		}
		g.stage = 2
		return resp, true, nil
	}
	return nil, false, errors.New("the server sent a challenge after the GSSAPI exchange was done")
}

// gssChecksum is the authenticator checksum of the Kerberos GSS mechanism
// (RFC 4121 §4.1.1): the length of the (empty) channel bindings, their MD5
// (zero when there are none) and the context flags, little-endian.
func gssChecksum(contextFlags uint32) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[0:4], 16)
	binary.LittleEndian.PutUint32(b[20:24], contextFlags)
	return b
}

// contextToken frames a Kerberos message as a GSS-API token (RFC 2743 §3.1):
// [APPLICATION 0] { mechanism OID, 2-byte token id, message }.
func contextToken(tokID, msg []byte) []byte {
	inner := make([]byte, 0, len(krb5OID)+2+len(msg))
	inner = append(append(append(inner, krb5OID...), tokID...), msg...)
	return asn1tools.AddASNAppTag(inner, 0)
}
