package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Wrap-token flags (RFC 4121 §4.2.2).
const (
	flagSentByAcceptor = 0x01
	flagSealed         = 0x02
	flagAcceptorSubkey = 0x04
)

// errSealed is a wrap token with confidentiality, which gokrb5 cannot unseal.
var errSealed = errors.New("the metastore sent a sealed (encrypted) wrap token, which this client cannot open: " +
	"it supports SASL QOP auth and auth-int, not auth-conf; set hadoop.rpc.protection to authentication or integrity on the metastore")

// wrapper makes and checks the RFC 4121 wrap tokens of one security context
// (integrity only: the checksum, no sealing).
type wrapper struct {
	key types.EncryptionKey
	// acceptorSubkey is set when the acceptor asserted a subkey in its AP-REP:
	// key is then that subkey, and every token of either side carries the flag.
	acceptorSubkey bool
	sendSeq        uint64
	checksumLen    int
}

func newWrapper(key types.EncryptionKey, acceptorSubkey bool, initialSeq uint64) (*wrapper, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("the context key's encryption type %d: %w", key.KeyType, err)
	}
	return &wrapper{key: key, acceptorSubkey: acceptorSubkey, sendSeq: initialSeq, checksumLen: et.GetHMACBitLength() / 8}, nil
}

// wrap returns a wrap token carrying plain with a checksum.
func (w *wrapper) wrap(plain []byte) ([]byte, error) {
	var flags byte
	if w.acceptorSubkey {
		flags |= flagAcceptorSubkey
	}
	wt := gssapi.WrapToken{
		Flags:     flags,
		EC:        uint16(w.checksumLen),
		SndSeqNum: w.sendSeq,
		Payload:   append([]byte{}, plain...), // the token must not alias the caller's buffer
	}
	if err := wt.SetCheckSum(w.key, keyusage.GSSAPI_INITIATOR_SEAL); err != nil {
		return nil, fmt.Errorf("checksumming a wrap token: %w", err)
	}
	w.sendSeq++
	return wt.Marshal()
}

// unwrap checks a wrap token from the acceptor and returns what it carries.
func (w *wrapper) unwrap(tok []byte) ([]byte, error) {
	if len(tok) < gssapi.HdrLen {
		return nil, fmt.Errorf("a wrap token of %d bytes is shorter than its %d-byte header", len(tok), gssapi.HdrLen)
	}
	if tok[0] != 0x05 || tok[1] != 0x04 {
		return nil, fmt.Errorf("the wrap token's id is % x, not 05 04 (RFC 4121): the metastore may use pre-RFC 4121 tokens "+
			"(DES or RC4 keys); give its principal AES keys", tok[:2])
	}
	flags := tok[2]
	if flags&flagSealed != 0 {
		return nil, errSealed
	}
	if flags&flagSentByAcceptor == 0 {
		return nil, errors.New("the wrap token does not say it was sent by the acceptor (a reflected token?)")
	}
	if got := flags&flagAcceptorSubkey != 0; got != w.acceptorSubkey {
		return nil, fmt.Errorf("the wrap token's acceptor-subkey flag is %v but the AP-REP %s a subkey", got, map[bool]string{true: "asserted", false: "did not assert"}[w.acceptorSubkey])
	}
	// Undo the right rotation (RRC) that some acceptors apply to what follows
	// the header, then let gokrb5 parse and check it.
	body := tok[gssapi.HdrLen:]
	if rrc := int(binary.BigEndian.Uint16(tok[6:8])); rrc != 0 && len(body) > 0 {
		rrc %= len(body)
		body = append(append([]byte{}, body[rrc:]...), body[:rrc]...)
	}
	flat := append(append([]byte{}, tok[:gssapi.HdrLen]...), body...)
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(flat, true); err != nil {
		return nil, fmt.Errorf("parsing a wrap token: %w", err)
	}
	if int(wt.EC) != w.checksumLen {
		return nil, fmt.Errorf("the wrap token's checksum is %d bytes, want %d", wt.EC, w.checksumLen)
	}
	if _, err := wt.Verify(w.key, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		return nil, fmt.Errorf("the wrap token's checksum does not verify (wrong key, or altered in transit): %w", err)
	}
	return wt.Payload, nil
}

// integrityLayer is QOP auth-int: every data frame is a wrap token.
type integrityLayer struct {
	w       *wrapper
	maxWrap int
}

func (l *integrityLayer) Wrap(plain []byte) ([]byte, error)   { return l.w.wrap(plain) }
func (l *integrityLayer) Unwrap(token []byte) ([]byte, error) { return l.w.unwrap(token) }
func (l *integrityLayer) MaxWrap() int                        { return l.maxWrap }
