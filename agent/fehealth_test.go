package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/change"
)

// A doris REFRESH held longer than the health interval (and timeout) does not
// fail the FE check: the check does not wait for the applier's single statement
// slot, so a master draining a slow REFRESH is not made to resign.
func TestDorisHealthHoldsDuringALongRefresh(t *testing.T) {
	// Not parallel: every FE check must answer within its 20 ms
	// timeout, which tests running beside it on a small machine would stretch.
	fe := fetest.NewServer(fetest.Options{})
	defer fe.Close()
	hold := make(chan struct{})
	fe.InjectFault(fetest.Fault{Match: "REFRESH", Hold: hold, Times: 1})
	ap, err := applier.New(applier.Config{Dialect: applier.DialectDoris, URL: fe.URL, User: "root", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const interval = 20 * time.Millisecond
	health := agent.NewFEHealth(ap, interval, interval, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); health.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	await(t, 5*time.Second, "a first healthy check", func() (bool, string) { return health.Healthy(), fmt.Sprintf("%+v", health.State()) })

	applied := make(chan error, 1)
	go func() {
		applied <- ap.Apply(context.Background(), change.Batch{Catalog: "hive", From: 0, To: 1,
			Changes: []change.Descriptor{{EventID: 1, Op: change.RefreshTable, DB: "d", Table: "t"}}})
	}()
	await(t, 5*time.Second, "the REFRESH held at the FE", func() (bool, string) {
		for _, s := range fe.Statements() {
			if s != "SELECT 1" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%q", fe.Statements())
	})
	held := time.Now()
	// Ten health intervals with the REFRESH in flight, each check healthy.
	await(t, 5*time.Second, "ten intervals of checks during the REFRESH", func() (bool, string) {
		st := health.State()
		if st.Err != nil {
			t.Fatalf("FE check failed while a REFRESH was in flight: %v", st.Err)
		}
		return st.At.After(held.Add(10 * interval)), ""
	})
	close(hold)
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
}
