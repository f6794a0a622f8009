package election

import clientv3 "go.etcd.io/etcd/client/v3"

// Token proves one particular mastership to etcd. A fenced write compares the
// leader key's CreateRevision with Rev inside the same transaction as the write, so
// a member whose mastership ended (lease expired, key deleted) can no longer write,
// whatever it still believes.
type Token struct {
	// Key is the member's candidate key under the election prefix.
	Key string
	// Rev is Key's CreateRevision. Successive masters have strictly increasing
	// revisions, so Rev is also the term's epoch.
	Rev int64
	// Lease is the session lease Key is bound to.
	Lease clientv3.LeaseID
}

// Valid reports whether the token names a mastership at all (the zero Token does
// not).
func (t Token) Valid() bool { return t.Key != "" && t.Rev > 0 }

// Term is one mastership of this member.
type Term struct {
	Token Token
	// Done is closed the moment the member stops being master (before the lease is
	// given up), so that work done for this term stops at once.
	Done <-chan struct{}
}
