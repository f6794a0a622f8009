package demo

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// leakIgnores are goroutines of libraries that outlive their clients by design.
var leakIgnores = []goleak.Option{
	goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
}

// The demo converges and reports success.
func TestDemoConverges(t *testing.T) {
	defer goleak.VerifyNone(t, leakIgnores...)
	for _, d := range []string{"native", "doris"} {
		t.Run(d, func(t *testing.T) {
			var out strings.Builder
			err := Run(context.Background(), Options{Dialect: d, Workload: 2 * time.Second, Rate: 100, Failover: true, Timeout: 40 * time.Second, Out: &out})
			if err != nil {
				t.Fatalf("demo: %v\n%s", err, out.String())
			}
			for _, want := range []string{"killing the master", "took over as master", "converged"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("demo output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
