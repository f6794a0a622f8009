package sasl

import "fmt"

// status is the first byte of a negotiation frame (TSaslTransport.NegotiationStatus).
type status byte

const (
	statusStart    status = 1 // the client names the mechanism
	statusOK       status = 2 // a step of the exchange; more follow
	statusBad      status = 3 // the peer refuses the exchange (its payload says why)
	statusError    status = 4 // the peer failed (its payload says why)
	statusComplete status = 5 // the sender's side of the exchange is done
)

func (s status) String() string {
	switch s {
	case statusStart:
		return "START"
	case statusOK:
		return "OK"
	case statusBad:
		return "BAD"
	case statusError:
		return "ERROR"
	case statusComplete:
		return "COMPLETE"
	}
	return fmt.Sprintf("status(%d)", byte(s))
}

func (s status) valid() bool { return s >= statusStart && s <= statusComplete }
