package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/hms/hmstest"
)

func devHMSCommand() *cli.Command {
	return &cli.Command{
		Name:  "hms",
		Usage: "run the fake Hive Metastore (real Thrift protocol) with an HTTP control API",
		Description: "Serves get_next_notification, get_current_notificationEventId and friends on --listen,\n" +
			"and the control API (POST /events, /clean, /reset, /faults, /down, /up; GET /state, /snapshot;\n" +
			"GET, POST and DELETE /workload) on --control; see docs/dev-servers.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9083", Usage: "Thrift address"},
			&cli.StringFlag{Name: "control", Value: "127.0.0.1:9084", Usage: "HTTP control API address"},
			&cli.Float64Flag{Name: "workload", Usage: "run a workload of this many events per second (0: none; POST /workload starts one later)"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the first workload (later runs take the next unused seeds)"},
			&cli.StringFlag{Name: "state", Usage: "keep the notification log and the objects in `DIR` (loaded at start, saved every second and at exit), so that a restart continues the log instead of resetting it"},
			&cli.StringFlag{Name: "format", Value: "mixed", Usage: "message format of generated events: json, gzip or mixed"},
			&cli.BoolFlag{Name: "framed", Usage: "framed Thrift transport"},
			&cli.BoolFlag{Name: "transactional", Usage: "workloads have transactional steps (5%: OPEN_TXN, ALLOC_WRITE_ID_EVENT, COMMIT_TXN, ABORT_TXN, COMMIT_COMPACTION_EVENT) unless POST /workload says otherwise"},
			&cli.StringFlag{Name: "txn-events", Value: "hive4", Usage: "whose transaction events to write: hive4 (Hive 4.0.1) or hive3 (Hive 3.1.3: header tableName \" \", dbName \"null\" but on ALLOC_WRITE_ID_EVENT, no compaction events)"},
			&cli.StringFlag{Name: "tls", Usage: "serve TLS with a self-signed certificate for 127.0.0.1, ::1 and localhost, generated at start and written (PEM) to `FILE`: the CA clients trust (events tail --tls-ca, hms_tls.ca_file)"},
		},
		Action: runDevHMS,
	}
}

func runDevHMS(c *cli.Context) error {
	format, ok := map[string]hmstest.Format{"json": hmstest.FormatJSON, "gzip": hmstest.FormatGzip, "mixed": hmstest.FormatMixed}[c.String("format")]
	if !ok {
		return fmt.Errorf("--format %q: want json, gzip or mixed", c.String("format"))
	}
	if c.Float64("workload") < 0 {
		return fmt.Errorf("--workload %v: want events per second, 0 for none", c.Float64("workload"))
	}
	style, ok := map[string]hmstest.TxnStyle{"hive4": hmstest.TxnHive4, "hive3": hmstest.TxnHive3}[c.String("txn-events")]
	if !ok {
		return fmt.Errorf("--txn-events %q: want hive4 or hive3", c.String("txn-events"))
	}
	opts := []hmstest.Option{hmstest.WithFormat(format), hmstest.WithTxnStyle(style)}
	if c.Bool("framed") {
		opts = append(opts, hmstest.WithFramed())
	}
	if c.String("tls") != "" {
		opts = append(opts, hmstest.WithTLS())
	}
	srv, err := hmstest.Listen(c.String("listen"), opts...)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	defer srv.Close()
	stateDir := c.String("state")
	if stateDir != "" {
		loaded, err := srv.LoadStateDir(stateDir)
		if err != nil {
			return fmt.Errorf("--state %s: %w", stateDir, err)
		}
		if loaded {
			fmt.Fprintf(c.App.ErrWriter, "state loaded from %s: current event id %d\n", stateDir, srv.CurrentEventID())
		} else if err := srv.SaveStateDir(stateDir); err != nil {
			// Saved at once, so that the db uuid survives a restart even
			// before the log first moves.
			return fmt.Errorf("--state %s: %w", stateDir, err)
		}
	}
	if f := c.String("tls"); f != "" {
		// Written before the address is printed, so a script that waits for
		// that line can use the file.
		if err := os.WriteFile(f, srv.CertPEM(), 0o644); err != nil {
			return fmt.Errorf("--tls: writing the certificate: %w", err)
		}
	}
	ln, err := net.Listen("tcp", c.String("control"))
	if err != nil {
		return fmt.Errorf("--control: %w", err)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	wl := hmstest.NewWorkloadControl(ctx, srv, c.Int64("seed"), func(format string, args ...any) { fmt.Fprintf(c.App.ErrWriter, format, args...) })
	defer wl.Stop()
	wl.SetTransactional(c.Bool("transactional"))
	hs := &http.Server{Handler: wl.Handler(srv.ControlHandler()), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	tlsNote := ""
	if f := c.String("tls"); f != "" {
		tlsNote = " (TLS; certificate in " + f + ")"
	}
	fmt.Fprintf(c.App.ErrWriter, "fake metastore on %s%s, control API on http://%s\n", srv.URI(), tlsNote, ln.Addr())
	if rate := c.Float64("workload"); rate > 0 {
		wl.Start(rate, 0)
	}
	saved := make(chan error, 1)
	if stateDir != "" {
		go func() { saved <- keepDevHMSState(ctx, srv, stateDir) }()
	} else {
		saved <- nil
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := hs.Shutdown(sctx); err == nil && serr != nil {
		err = serr
	}
	wl.Stop()
	if serr := <-saved; err == nil && serr != nil {
		err = serr
	}
	if stateDir != "" {
		// The last save, after the workload stopped: nothing changes any more.
		if serr := srv.SaveStateDir(stateDir); err == nil && serr != nil {
			err = fmt.Errorf("--state %s: %w", stateDir, serr)
		}
	}
	return err
}

// keepDevHMSState saves srv's state to dir every second while its log moved,
// until ctx ends (the caller saves once more after that), so that a process
// killed without a chance to save loses at most the last second.
func keepDevHMSState(ctx context.Context, srv *hmstest.Server, dir string) error {
	type mark struct{ current, oldest int64 }
	var last mark
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if now := (mark{srv.CurrentEventID(), srv.OldestEventID()}); now != last {
			if err := srv.SaveStateDir(dir); err != nil {
				return fmt.Errorf("--state %s: %w", dir, err)
			}
			last = now
		}
	}
}
