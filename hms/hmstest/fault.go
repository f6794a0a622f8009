package hmstest

import (
	"context"
	"time"
)

type repeatKey struct{}

// repeatMethod is the one method a Repeat fault changes.
const repeatMethod = "get_next_notification"

func repeatRequested(ctx context.Context) bool {
	v, _ := ctx.Value(repeatKey{}).(bool)
	return v
}

// Fault is what the server does to calls of one method instead of (or before)
// answering them.
type Fault struct {
	// Err, when set, answers the call with a Thrift application exception
	// carrying this message (how a metastore reports a failing call).
	Err string `json:"err,omitempty"`
	// Delay stalls the call this long before it is answered (or dropped).
	Delay time.Duration `json:"delay,omitempty"`
	// Drop closes the connection instead of answering.
	Drop bool `json:"drop,omitempty"`
	// Repeat makes get_next_notification answer with every event twice and,
	// first, the event with the requested id itself, as a metastore returning
	// duplicate ids would.
	Repeat bool `json:"repeat,omitempty"`
	// Misreply answers the call normally but with the reply's message header
	// spoilt (MisreplyMethod, MisreplySequence, MisreplyType), as a broken
	// proxy or a desynchronised stream would deliver it.
	Misreply string `json:"misreply,omitempty"`
	// Times is how many calls the fault applies to; 0 means every call until
	// ClearFaults.
	Times int `json:"times,omitempty"`
}

// InjectFault makes calls of method (the Thrift method name, e.g.
// "get_next_notification") fail as f says, replacing any fault of that method.
func (s *Server) InjectFault(method string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = &f
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

// takeFault counts a call of method and returns the fault to apply to it, if any.
func (s *Server) takeFault(method string) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	f, ok := s.faults[method]
	if !ok {
		return Fault{}
	}
	if f.Times > 0 {
		f.Times--
		if f.Times == 0 {
			delete(s.faults, method)
		}
	}
	return *f
}
