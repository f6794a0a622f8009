package sasl

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/types"
)

// acceptorToken makes a wrap token as an acceptor would.
func acceptorToken(t *testing.T, key types.EncryptionKey, flags byte, payload []byte) []byte {
	t.Helper()
	wt := gssapi.WrapToken{Flags: flags, EC: 12, SndSeqNum: 7, Payload: payload}
	if err := wt.SetCheckSum(key, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		t.Fatal(err)
	}
	b, err := wt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testKey(t *testing.T) types.EncryptionKey {
	t.Helper()
	et, err := crypto.GetEtype(etypeID.AES256_CTS_HMAC_SHA1_96)
	if err != nil {
		t.Fatal(err)
	}
	k, err := types.GenerateEncryptionKey(et)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestUnwrap(t *testing.T) {
	key := testKey(t)
	w, err := newWrapper(key, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	good := acceptorToken(t, key, flagSentByAcceptor|flagAcceptorSubkey, []byte("offer"))
	if p, err := w.unwrap(good); err != nil || string(p) != "offer" {
		t.Errorf("good token: %q, %v", p, err)
	}

	// The same token rotated right by 5 (RRC) as some acceptors send it.
	body := good[gssapi.HdrLen:]
	rotated := append(append([]byte{}, good[:gssapi.HdrLen]...), append(append([]byte{}, body[len(body)-5:]...), body[:len(body)-5]...)...)
	binary.BigEndian.PutUint16(rotated[6:8], 5)
	if p, err := w.unwrap(rotated); err != nil || string(p) != "offer" {
		t.Errorf("rotated token: %q, %v", p, err)
	}

	tampered := append([]byte{}, good...)
	tampered[gssapi.HdrLen] ^= 1
	if _, err := w.unwrap(tampered); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("tampered token: %v, want a checksum error", err)
	}
	if _, err := w.unwrap(acceptorToken(t, testKey(t), flagSentByAcceptor|flagAcceptorSubkey, []byte("offer"))); err == nil {
		t.Error("a token under another key was accepted")
	}
	if _, err := w.unwrap(acceptorToken(t, key, flagSentByAcceptor, []byte("offer"))); err == nil || !strings.Contains(err.Error(), "subkey") {
		t.Errorf("token without the subkey flag: %v, want a subkey error", err)
	}
	if _, err := w.unwrap(acceptorToken(t, key, flagAcceptorSubkey, []byte("offer"))); err == nil || !strings.Contains(err.Error(), "acceptor") {
		t.Errorf("token not from the acceptor: %v", err)
	}
	if _, err := w.unwrap(acceptorToken(t, key, flagSentByAcceptor|flagAcceptorSubkey|flagSealed, []byte("offer"))); err == nil || !strings.Contains(err.Error(), "hadoop.rpc.protection") {
		t.Errorf("sealed token: %v, want the hadoop.rpc.protection advice", err)
	}
	for _, b := range [][]byte{nil, good[:10], append([]byte{0x01, 0x02}, good[2:]...)} {
		if _, err := w.unwrap(b); err == nil {
			t.Errorf("malformed token % x accepted", b)
		}
	}
}
