package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A read this member cancelled (its term ended, a read-ahead discarded,
// shutdown) is not a failing metastore; a refused connection is.
func TestCancelledMetastoreReadIsNotAFailure(t *testing.T) {
	var r recorder
	r.metastoreRead(fmt.Errorf("get_next_notification: %w", context.Canceled))
	if st := r.snapshot(); st.hmsErr != "" || !st.hmsFailingSince.IsZero() {
		t.Fatalf("after a cancelled read: %q since %v; want no failure", st.hmsErr, st.hmsFailingSince)
	}
	r.metastoreRead(errors.New("dial tcp 127.0.0.1:9083: connection refused"))
	if st := r.snapshot(); !strings.Contains(st.hmsErr, "connection refused") || st.hmsFailingSince.IsZero() {
		t.Fatalf("after a refused read: %q since %v; want the failure", st.hmsErr, st.hmsFailingSince)
	}
}
