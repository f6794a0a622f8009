package main

import (
	"context"
	"crypto/tls"
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
	"github.com/hmssync/hmssync/hms/message"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/eventlines"
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
					&cli.StringFlag{Name: "hms-catalog", Value: message.DefaultCatalog, Usage: "HMS catalog to follow; events of other catalogs give no descriptors"},
				},
				Action: func(c *cli.Context) error {
					failed, err := eventlines.Decode(c.App.Reader, c.App.Writer, c.String("hms-catalog"))
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
				Usage: "print a metastore's notification events as they arrive (one short line each on a terminal, else JSON lines)",
				Flags: append([]cli.Flag{
					&cli.BoolFlag{Name: "compact", Usage: "one short line per event: id, time, type, db.table, message size (the default on a terminal)"},
					&cli.BoolFlag{Name: "json", Usage: "each event's full JSON, one per line (the default when not on a terminal)"},
					&cli.DurationFlag{Name: "connect-timeout", Value: 5 * time.Second, Usage: "bound of connecting and of the first answer (get_current_notificationEventId)"},
					&cli.StringFlag{Name: "hms", Required: true, Usage: "metastore URIs, comma-separated: thrift://h:9083[,thrift://h2:9083]"},
					&cli.Int64Flag{Name: "from", Value: -1, Usage: "print events after this id (default: the current id, i.e. only new events)"},
					&cli.BoolFlag{Name: "decode", Usage: "print each event's descriptors after it"},
					&cli.StringFlag{Name: "hms-catalog", Value: message.DefaultCatalog, Usage: "HMS catalog for --decode"},
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
	if c.Bool("compact") && c.Bool("json") {
		return errors.New("--compact and --json: give one (on a terminal the default is --compact, else --json)")
	}
	compact := c.Bool("compact") || (!c.Bool("json") && isTerminal(c.App.Writer))
	timeout := c.Duration("connect-timeout")
	if timeout <= 0 {
		return errors.New("--connect-timeout must be positive")
	}
	client, err := hms.NewClient(hms.ClientConfig{
		URIs:        strings.Split(c.String("hms"), ","),
		DialTimeout: timeout,
		Framed:      c.Bool("framed"),
		TLS:         tlsCfg,
		Kerberos:    krb,
		UGIUser:     c.String("ugi-user"),
	})
	if err != nil {
		return err
	}
	defer client.Close()
	if c.Int("batch") <= 0 || c.Duration("poll") <= 0 {
		return errors.New("--batch and --poll must be positive")
	}
	if err := probeMetastore(ctx, client, c.String("hms"), tlsCfg, timeout); err != nil {
		return err
	}
	return eventlines.Tail(ctx, client, c.App.Writer, c.App.ErrWriter, eventlines.TailOptions{
		From: c.Int64("from"), Batch: c.Int("batch"), Poll: c.Duration("poll"),
		Decode: c.Bool("decode"), Decoder: message.NewDecoder(c.String("hms-catalog")), Compact: compact,
	})
}

// probeMetastore asks for the current event id, so that a URI naming
// something else than a metastore fails at once, within timeout: half of it for
// the Thrift call, the rest to ask the URIs that did not answer whether they
// are web servers (which wait, silent, for a request line that a Thrift
// message never completes).
func probeMetastore(ctx context.Context, client *hms.Client, uris string, tlsCfg *tls.Config, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout/2)
	defer cancel()
	_, err := client.CurrentEventID(pctx)
	switch {
	case err == nil || ctx.Err() != nil:
		return nil
	case !errors.Is(err, context.DeadlineExceeded):
		return err
	}
	list := strings.Split(uris, ",")
	for _, u := range list {
		hctx, cancel := context.WithTimeout(ctx, timeout/2/time.Duration(len(list)))
		herr := hms.ProbeHTTP(hctx, u, tlsCfg)
		cancel()
		if herr != nil {
			return herr
		}
	}
	return fmt.Errorf("not a Thrift metastore at %s, or one that does not answer: no answer to get_current_notificationEventId within %s (%w); "+
		"check the URI's port (the metastore's is 9083 by default), --framed, --tls and --auth-*", uris, timeout/2, err)
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
