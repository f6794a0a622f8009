package agent_test

import (
	"flag"
	"runtime"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	flag.Parse()
	raiseDefaultParallel()
	goleak.VerifyTestMain(m,
		// The etcd client's gRPC resolver and the embedded server's background
		// loggers can outlive a test by a moment after Close.
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

// raiseDefaultParallel lets up to parallelTests tests run at once unless
// -parallel is given. The end-to-end tests spend their time waiting for
// leases, polls, fsyncs and injected delays, not on the CPU (run one after
// the other they keep under a tenth of a core busy, a fifth with -race), so
// -parallel's default of GOMAXPROCS would leave a small machine idle. When
// fuzzing, -parallel is the number of fuzzing workers, which do use the CPU:
// it keeps its default.
func raiseDefaultParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	fuzzing := flag.Lookup("test.fuzz").Value.String() != ""
	if given || fuzzing || runtime.GOMAXPROCS(0) >= parallelTests {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(parallelTests)); err != nil {
		panic(err)
	}
}
