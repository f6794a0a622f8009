package sasltest

import (
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
)

// wrap makes an acceptor's wrap token (integrity only; sealed only sets the
// flag, to test a client's refusal of confidentiality).
func (c *Context) wrap(plain []byte, sealed bool) ([]byte, error) {
	et, err := crypto.GetEtype(c.key.KeyType)
	if err != nil {
		return nil, err
	}
	flags := byte(0x01) // sent by the acceptor
	if c.Subkey {
		flags |= 0x04
	}
	if sealed {
		flags |= 0x02
	}
	wt := gssapi.WrapToken{Flags: flags, EC: uint16(et.GetHMACBitLength() / 8), SndSeqNum: c.sendSeq, Payload: append([]byte{}, plain...)}
	if err := wt.SetCheckSum(c.key, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		return nil, err
	}
	c.sendSeq++
	return wt.Marshal()
}

// Wrap makes a wrap token carrying plain, as the acceptor.
func (c *Context) Wrap(plain []byte) ([]byte, error) { return c.wrap(plain, false) }

// Unwrap checks a wrap token from the initiator: its flags must say who sent
// it and whether the acceptor subkey keys it, and its checksum must verify
// with that key.
func (c *Context) Unwrap(tok []byte) ([]byte, error) {
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(tok, false); err != nil {
		return nil, err
	}
	if got := wt.Flags&0x04 != 0; got != c.Subkey {
		return nil, fmt.Errorf("the initiator's acceptor-subkey flag is %v, want %v", got, c.Subkey)
	}
	if wt.Flags&0x02 != 0 {
		return nil, errors.New("the initiator sealed its token")
	}
	if _, err := wt.Verify(c.key, keyusage.GSSAPI_INITIATOR_SEAL); err != nil {
		return nil, fmt.Errorf("the initiator's wrap token: %w", err)
	}
	return wt.Payload, nil
}
