package sasl

// Mechanism is the client side of one SASL mechanism.
type Mechanism interface {
	// Name is the mechanism's registered name, sent in the START frame.
	Name() string
	// Start returns the initial response, sent right after the START frame.
	Start() ([]byte, error)
	// Step answers one challenge of the server. done reports that the
	// mechanism expects no further challenge: its response is the last.
	Step(challenge []byte) (response []byte, done bool, err error)
	// Layer is the security layer negotiated, once done; nil means none
	// (QOP auth): data frames then carry the bytes as they are.
	Layer() Layer
}

// Layer protects the data frames after the negotiation (QOP auth-int).
type Layer interface {
	// Wrap protects one outgoing frame's payload.
	Wrap(plain []byte) ([]byte, error)
	// Unwrap checks one incoming frame's payload and returns the bytes it carries.
	Unwrap(token []byte) ([]byte, error)
	// MaxWrap is the most plaintext one wrapped frame may carry (the server's
	// maximum buffer less the wrapping overhead); 0 means no limit.
	MaxWrap() int
}
