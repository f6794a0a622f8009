package sasl

import (
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// acceptAPRep checks the acceptor's answer to the AP-REQ and returns the wrap
// tokens' keys: the acceptor's subkey when the AP-REP asserts one (RFC 4121
// §2: it then replaces the initiator's keys), else the ticket's session key
// (this client sends no subkey of its own).
func (g *GSSAPI) acceptAPRep(token []byte) (*wrapper, error) {
	var tok spnego.KRB5Token
	if err := tok.Unmarshal(token); err != nil {
		return nil, fmt.Errorf("the server's answer to the AP-REQ is not a Kerberos token: %w", err)
	}
	switch {
	case tok.IsKRBError():
		return nil, &AcceptorError{Principal: g.display, KRBError: tok.KRBError}
	case !tok.IsAPRep():
		return nil, fmt.Errorf("the server answered the AP-REQ with neither an AP-REP nor a KRB-ERROR")
	}
	plain, err := crypto.DecryptEncPart(tok.APRep.EncPart, g.sessionKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		return nil, fmt.Errorf("the AP-REP does not decrypt with the session key of %s (mutual authentication failed): %w", g.display, err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return nil, fmt.Errorf("decoding the AP-REP: %w", err)
	}
	// The acceptor proves it read our authenticator by echoing its time
	// (RFC 4120 §3.2.5); generalized time carries whole seconds only.
	if part.CTime.Unix() != g.auth.CTime.Unix() || part.Cusec != g.auth.Cusec {
		return nil, fmt.Errorf("the AP-REP does not echo the authenticator's time (mutual authentication of %s failed)", g.display)
	}
	key, subkey := g.sessionKey, false
	if part.Subkey.KeyType != 0 {
		key, subkey = part.Subkey, true
	}
	return newWrapper(key, subkey, uint64(uint32(g.auth.SeqNumber)))
}
