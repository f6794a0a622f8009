package sasl

import (
	"encoding/binary"
	"fmt"
)

// Security layers a GSSAPI server offers and a client chooses (RFC 4752 §3.3),
// as Hadoop's hadoop.rpc.protection names them.
const (
	layerNone      = 1 // QOP auth (authentication)
	layerIntegrity = 2 // QOP auth-int (integrity)
	layerPrivacy   = 4 // QOP auth-conf (privacy)
)

// maxReceive is the largest wrapped frame this client accepts under auth-int,
// announced to the server: the 3-byte field's largest value. Larger Thrift
// messages arrive in several frames.
const maxReceive = 1<<24 - 1 // the 3-byte field's largest value

// offer is the server's security-layer message, once unwrapped.
type offer struct {
	layers  byte
	maxSize uint32
}

func parseOffer(b []byte) (offer, error) {
	if len(b) != 4 {
		return offer{}, fmt.Errorf("the server's security-layer offer is %d bytes, want 4 (RFC 4752)", len(b))
	}
	return offer{layers: b[0], maxSize: binary.BigEndian.Uint32(b) & 0xffffff}, nil
}

// choose picks the weakest layer the server offers that this client supports,
// as a Java client with its default QOP list does: auth, else auth-int.
func (o offer) choose() (byte, error) {
	switch {
	case o.layers&layerNone != 0:
		return layerNone, nil
	case o.layers&layerIntegrity != 0:
		return layerIntegrity, nil
	case o.layers&layerPrivacy != 0:
		return 0, fmt.Errorf("the metastore demands SASL QOP auth-conf (hadoop.rpc.protection=privacy), " +
			"which this client cannot provide (gokrb5 does not seal wrap tokens): allow authentication or integrity in the " +
			"metastore's hadoop.rpc.protection, e.g. \"privacy,integrity\" or \"authentication\"; use hms_tls for encryption")
	}
	return 0, fmt.Errorf("the metastore offers no SASL security layer this client knows (bit mask %#x)", o.layers)
}

// choiceMessage is the client's answer: the chosen layer, the largest frame it
// accepts (0 without a layer, as RFC 4752 requires) and the authorization id.
func choiceMessage(layer byte, authzID string) []byte {
	b := make([]byte, 4, 4+len(authzID))
	if layer != layerNone {
		binary.BigEndian.PutUint32(b, maxReceive)
	}
	b[0] = layer
	return append(b, authzID...)
}
