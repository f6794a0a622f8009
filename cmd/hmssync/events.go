package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/config"
)

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:  "events",
		Usage: "decode HMS notification events, or tail a metastore's log",
		Subcommands: []*cli.Command{
			{
				Name:  "decode",
				Usage: "read NotificationEvent JSON lines on stdin, print change descriptor JSON lines",
				Description: "Each input line is {eventId, eventTime, eventType, dbName, tableName, message, messageFormat, catName}.\n" +
					"Each descriptor is printed as one line; an undecodable event prints {\"event_id\":N,\"error\":\"...\"}.\n" +
					"Decoding goes on after errors; the exit status is 1 if any event failed.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "hms-catalog", Value: hms.DefaultCatalog, Usage: "HMS catalog to follow; events of other catalogs give no descriptors"},
				},
				Action: func(c *cli.Context) error {
					failed, err := decodeEvents(c.App.Reader, c.App.Writer, c.String("hms-catalog"))
					if err != nil {
						return err
					}
					if failed > 0 {
						return cli.Exit(fmt.Sprintf("%d event(s) could not be decoded", failed), 1)
					}
					return nil
				},
			},
			{
				Name:  "tail",
				Usage: "print a metastore's notification events as they arrive (JSON lines)",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "hms", Required: true, Usage: "metastore URIs, comma-separated: thrift://h:9083[,thrift://h2:9083]"},
					&cli.Int64Flag{Name: "from", Value: -1, Usage: "print events after this id (default: the current id, i.e. only new events)"},
					&cli.BoolFlag{Name: "decode", Usage: "print each event's descriptors after it"},
					&cli.StringFlag{Name: "hms-catalog", Value: hms.DefaultCatalog, Usage: "HMS catalog for --decode"},
					&cli.DurationFlag{Name: "poll", Value: time.Second, Usage: "wait between polls when caught up"},
					&cli.IntFlag{Name: "batch", Value: 500, Usage: "events per fetch"},
					&cli.BoolFlag{Name: "framed", Usage: "framed Thrift transport"},
					&cli.StringFlag{Name: "ugi-user", Usage: "user for set_ugi after connecting (none by default)"},
					&cli.BoolFlag{Name: "tls", Category: "TLS", Usage: "connect with TLS (hive.metastore.use.SSL), trusting the system's CAs unless --tls-ca is given; every --tls-* flag implies it"},
					&cli.StringFlag{Name: "tls-ca", Category: "TLS", Usage: "PEM `FILE` of the CA certificates that signed the metastore's"},
					&cli.StringFlag{Name: "tls-cert", Category: "TLS", Usage: "PEM `FILE` of a client certificate (with --tls-key)"},
					&cli.StringFlag{Name: "tls-key", Category: "TLS", Usage: "PEM `FILE` of the client certificate's private key"},
					&cli.StringFlag{Name: "tls-server-name", Category: "TLS", Usage: "`NAME` to check the metastore's certificate against (default: the URI's host)"},
					&cli.BoolFlag{Name: "tls-insecure-skip-verify", Category: "TLS", Usage: "do not check the metastore's certificate (testing only)"},
				}, kerberosFlags()...),
				Action: tailEvents,
			},
		},
	}
}

// decodeEvents decodes NotificationEvent JSON lines from in and writes descriptor
// lines to out. It returns how many events failed; err is only for I/O errors.
func decodeEvents(in io.Reader, out io.Writer, catalog string) (failed int, err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30) // messages of thousands of partitions are large
	w := bufio.NewWriter(out)
	dec := hms.Decoder{Catalog: catalog}
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var ev hms.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			failed++
			if err := writeLine(w, decodeFailure{EventID: ev.ID, Error: fmt.Sprintf("input line %d is not a NotificationEvent JSON object: %v", line, err)}); err != nil {
				return failed, err
			}
			continue
		}
		if err := writeDecoded(w, dec, ev); err != nil {
			if !isDecodeError(err) {
				return failed, err
			}
			failed++
		}
	}
	if err := sc.Err(); err != nil {
		return failed, fmt.Errorf("reading stdin: %w", err)
	}
	return failed, w.Flush()
}

type decodeFailure struct {
	EventID int64  `json:"event_id"`
	Error   string `json:"error"`
}

// writeDecoded writes ev's descriptors, or its error line; a decode failure is
// returned (after its line is written) so that callers can count it.
func writeDecoded(w io.Writer, dec hms.Decoder, ev hms.Event) error {
	descs, derr := dec.Decode(ev)
	if derr != nil {
		if err := writeLine(w, decodeFailure{EventID: ev.ID, Error: derr.Error()}); err != nil {
			return err
		}
		return derr
	}
	for _, d := range descs {
		if err := writeLine(w, d); err != nil {
			return err
		}
	}
	return nil
}

func isDecodeError(err error) bool {
	var de *hms.DecodeError
	return errors.As(err, &de)
}

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

func tailEvents(c *cli.Context) error {
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	tlsCfg, err := tailTLS(c)
	if err != nil {
		return err
	}
	krb, err := kerberosFromFlags(c)
	if err != nil {
		return err
	}
	client, err := hms.NewClient(hms.ClientConfig{
		URIs:     strings.Split(c.String("hms"), ","),
		Framed:   c.Bool("framed"),
		TLS:      tlsCfg,
		Kerberos: krb,
		UGIUser:  c.String("ugi-user"),
	})
	if err != nil {
		return err
	}
	defer client.Close()
	if c.Int("batch") <= 0 || c.Duration("poll") <= 0 {
		return errors.New("--batch and --poll must be positive")
	}
	return tail(ctx, client, c.App.Writer, c.App.ErrWriter, c.Int64("from"), c.Int("batch"), c.Duration("poll"), c.Bool("decode"), hms.Decoder{Catalog: c.String("hms-catalog")})
}

// tailFlags maps the hms_tls keys to the flags of `events tail`, for errors.
var tailFlags = map[string]string{
	"enabled": "--tls", "ca_file": "--tls-ca", "cert_file": "--tls-cert", "key_file": "--tls-key",
	"server_name": "--tls-server-name", "insecure_skip_verify": "--tls-insecure-skip-verify", "": "--tls-*",
}

// tailTLS reads the --tls* flags, with the same checks as a catalog's hms_tls;
// unlike in the file, a --tls-* flag turns TLS on by itself.
func tailTLS(c *cli.Context) (*tls.Config, error) {
	t := config.HMSTLS{
		CAFile:             c.String("tls-ca"),
		CertFile:           c.String("tls-cert"),
		KeyFile:            c.String("tls-key"),
		ServerName:         c.String("tls-server-name"),
		InsecureSkipVerify: c.Bool("tls-insecure-skip-verify"),
	}
	t.Enabled = c.Bool("tls") || t.AnySet()
	return t.ClientConfig(func(key string) string { return tailFlags[key] })
}

// tail prints events after from until ctx ends; from < 0 starts at the current id.
func tail(ctx context.Context, client *hms.Client, out, errOut io.Writer, from int64, batch int, poll time.Duration, decode bool, dec hms.Decoder) error {
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 30*time.Second) }
	cursor := from
	if cursor < 0 {
		cctx, cancel := call()
		cur, err := client.CurrentEventID(cctx)
		cancel()
		if err != nil {
			return err
		}
		cursor = cur
		fmt.Fprintf(errOut, "tailing events after %d\n", cursor)
	}
	w := bufio.NewWriter(out)
	for {
		cctx, cancel := call()
		f, err := client.NextEvents(cctx, cursor, batch, nil)
		cancel()
		switch {
		case ctx.Err() != nil:
			return w.Flush()
		case err != nil:
			fmt.Fprintf(errOut, "fetch after %d: %v (retrying)\n", cursor, err)
		default:
			switch f.Continuity {
			case hms.Gap:
				if len(f.Events) == 0 {
					// The cleaner emptied the log behind the cursor: nothing
					// to print, and asking again from there would report the
					// same gap on every poll.
					// (Current is set for an empty batch; Last covers a batch
					// whose events were all skipped.)
					next := max(f.Current, f.Last)
					fmt.Fprintf(errOut, "gap: every event after %d was cleaned; following from %d\n", cursor, next)
					cursor = next
					continue
				}
				fmt.Fprintf(errOut, "gap: events after %d were cleaned; next is %d\n", cursor, f.Events[0].ID)
			case hms.Reset:
				fmt.Fprintf(errOut, "reset: the metastore's current id %d is below %d; following from there\n", f.Current, cursor)
				cursor = f.Current
				continue
			}
			for _, ev := range f.Events {
				if err := writeLine(w, ev); err != nil {
					return err
				}
				if decode {
					if err := writeDecoded(w, dec, ev); err != nil && !isDecodeError(err) {
						return err
					}
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			cursor = f.Last
			if len(f.Events) == batch {
				continue
			}
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return w.Flush()
		case <-t.C:
		}
	}
}
