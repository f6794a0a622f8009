package sasl

import "io"

// Probe reports whether the server at the other end of rw speaks Thrift's SASL
// transport. It sends a START frame for GSSAPI with an empty initial response:
// a SASL server answers with a negotiation frame (a Hive metastore with BAD
// "GSS initiate failed"), a plain Thrift server closes the connection or
// answers something else. rw's deadline is the caller's; rw is spent after.
func Probe(rw io.ReadWriter) bool {
	if writeNegotiation(rw, statusStart, []byte("GSSAPI")) != nil || writeNegotiation(rw, statusOK, nil) != nil {
		return false
	}
	_, _, err := readNegotiation(rw, 64<<10)
	if err == nil {
		return true
	}
	_, refused := err.(*ServerError)
	return refused
}
