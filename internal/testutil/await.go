// Package testutil is the floor of helpers that only tests use: the one
// wait-until helper here, and in its subpackages a real embedded etcd per test
// (etcdtest), a pausable link to etcd (etcdpartition) and a throwaway Kerberos
// KDC (kdctest). Production packages never import it; cmd/hmssync's deps test
// checks that.
package testutil

import (
	"testing"
	"time"
)

// pollInterval is how long Await sleeps between two evaluations of its condition.
const pollInterval = 10 * time.Millisecond

// Await evaluates cond until it reports true, and fails the test if it does not
// within timeout. cond says why it does not hold yet; the failure names what
// was awaited and the reason of the last evaluation, so that a timeout tells
// where the wait stopped rather than only that it did.
func Await(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, why)
		}
		time.Sleep(pollInterval)
	}
}
