package applier

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/hmssync/hmssync/applier/fetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestDorisLogsEachStatementWithItsDuration checks that each statement is
// logged at debug with its duration: every statement the FE received is
// logged once, in order, naming the FE, with a duration that covers the time
// the FE took; a failed one is logged with its class and error.
func TestDorisLogsEachStatementWithItsDuration(t *testing.T) {
	fe := fetest.NewServer(fetest.Options{Password: "pw"})
	defer fe.Close()
	core, logs := observer.New(zap.DebugLevel)
	a, err := New(Config{Dialect: DialectDoris, URL: fe.URL, User: "root", Password: "pw", Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}

	// The FE holds one statement for slow: its logged duration must be at
	// least that, which a duration measured around anything else would miss.
	// Only a lower bound is asserted; a busy machine makes it longer.
	const slow = 30 * time.Millisecond
	fe.InjectFault(fetest.Fault{Match: tableDT, Delay: slow, Times: 1})
	if err := a.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(context.Background(), ops(addP("d", "t", "p=1"), reg("d", "u"))); err != nil {
		t.Fatal(err)
	}
	// The second statement of this batch fails; the batch stops there.
	failing := "REFRESH TABLE `hive`.`e`.`v`"
	fe.InjectFault(fetest.Fault{Match: failing, Code: 500, Times: 1})
	applyErr := a.Apply(context.Background(), ops(reg("e", "v")))
	if applyErr == nil {
		t.Fatal("want the injected code 500 to fail the batch")
	}

	sent := fe.Statements()
	var logged []string
	for _, e := range logs.All() {
		if e.Message != "fe statement" && e.Message != "fe statement failed" {
			continue
		}
		f := e.ContextMap()
		stmt, _ := f["stmt"].(string)
		logged = append(logged, stmt)
		if e.Level != zapcore.DebugLevel {
			t.Errorf("%q logged at %s, want debug", stmt, e.Level)
		}
		if f["fe"] != fe.URL {
			t.Errorf("%q logged with fe %v, want %s", stmt, f["fe"], fe.URL)
		}
		d, ok := f["duration"].(time.Duration)
		if !ok || d <= 0 {
			t.Errorf("%q logged with duration %v, want a positive duration", stmt, f["duration"])
		}
		if stmt == tableDT && d < slow {
			t.Errorf("%q logged with duration %v, but the FE held it for %v", stmt, d, slow)
		}
		failed := e.Message == "fe statement failed"
		if failed != (stmt == failing) {
			t.Errorf("%q logged as %q", stmt, e.Message)
		}
		if failed {
			if want := ClassOf(applyErr).String(); f["class"] != want {
				t.Errorf("failed %q logged with class %v, want %s", stmt, f["class"], want)
			}
			if f["error"] != applyErr.Error() {
				t.Errorf("failed %q logged with error %v, want %v", stmt, f["error"], applyErr)
			}
		}
	}
	if !reflect.DeepEqual(logged, sent) {
		t.Errorf("logged statements\n  %q\nthe FE received\n  %q", logged, sent)
	}
	if len(sent) < 5 || sent[0] != checkStatement || sent[len(sent)-1] != failing {
		t.Errorf("the FE received %q: want SELECT 1, the first batch, and the second batch up to %q", sent, failing)
	}
}
