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
			"and the control API (POST /events, /clean, /reset, /faults, /down, /up; GET /state, /snapshot)\n" +
			"on --control; see docs/dev-servers.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9083", Usage: "Thrift address"},
			&cli.StringFlag{Name: "control", Value: "127.0.0.1:9084", Usage: "HTTP control API address"},
			&cli.Float64Flag{Name: "workload", Usage: "run a workload of this many events per second (0: none)"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "workload seed"},
			&cli.StringFlag{Name: "format", Value: "mixed", Usage: "message format of generated events: json, gzip or mixed"},
			&cli.BoolFlag{Name: "framed", Usage: "framed Thrift transport"},
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
	opts := []hmstest.Option{hmstest.WithFormat(format)}
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
	hs := &http.Server{Handler: srv.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	tlsNote := ""
	if f := c.String("tls"); f != "" {
		tlsNote = " (TLS; certificate in " + f + ")"
	}
	fmt.Fprintf(c.App.ErrWriter, "fake metastore on %s%s, control API on http://%s\n", srv.URI(), tlsNote, ln.Addr())
	if rate := c.Float64("workload"); rate > 0 {
		go func() {
			err := hmstest.Workload{Rate: rate, Seed: c.Int64("seed")}.Run(ctx, srv)
			if err != nil {
				err = fmt.Errorf("workload: %w", err)
			}
			errc <- err
		}()
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
	return err
}
