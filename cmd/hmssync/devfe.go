package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/internal/sidecar"
)

// devFECommand runs the fake Doris FE of applier/fetest as a process: one
// endpoint, a Doris-like cluster of endpoints sharing one cache, or independent
// FEs each with its own cache (for the native dialect). Documented in
// docs/dev-servers.md.
func devFECommand() *cli.Command {
	return &cli.Command{
		Name:  "fe",
		Usage: "run a fake Doris FE (SQL /api/query subset, native endpoint, cache model, faults)",
		Description: "Serves POST /api/query/{ns}/{db} (REFRESH statements and SELECT 1), the hmssync native\n" +
			"endpoint (docs/fe-protocol.md), GET /_fetest/state and POST/DELETE /_fetest/faults.\n" +
			"The password flag is acceptable here because this is a test double, never a real FE.",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "listen", Value: cli.NewStringSlice("127.0.0.1:8030"),
				Usage: "address of an FE endpoint; repeat (or separate with commas) for several"},
			&cli.IntFlag{Name: "fes", Value: 1,
				Usage: "number of endpoints when one --listen is given: its port and the following ones"},
			&cli.BoolFlag{Name: "independent",
				Usage: "give each endpoint its own cache (separate FEs, as for the native dialect) instead of one shared cache (a Doris cluster)"},
			&cli.StringFlag{Name: "user", Value: "root", Usage: "accepted user"},
			&cli.StringFlag{Name: "password", Value: "", Usage: "accepted password (empty, like a fresh Doris)"},
			&cli.StringFlag{Name: "truth-url",
				Usage: "URL answering a catalog's metastore content as JSON {db: {table: [partition, ...]}}; " +
					"{catalog} in it is replaced by the catalog name. Without it REFRESH only records when it happened"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug logs every statement and batch"},
			&cli.StringSliceFlag{Name: "catalog",
				Usage: "declare a Hive catalog (SHOW CATALOGS lists it, type hms); NAME or NAME:sync for one with hive.enable_hms_events_incremental_sync=true. " +
					"With any, the native state of other catalogs answers 404"},
			devFEMetastoreFlag(),
		}, kerberosFlags()...), // for --hms
		Action: runDevFE,
	}
}

func runDevFE(c *cli.Context) error {
	log, _, err := sidecar.NewLogger(c.String("log-level"), "")
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	addrs, err := feAddrs(c.StringSlice("listen"), c.Int("fes"))
	if err != nil {
		return err
	}
	opts := fetest.Options{User: c.String("user"), Password: c.String("password"), Logger: log}
	for _, name := range c.StringSlice("catalog") {
		props := map[string]string{"type": "hms"}
		if n, ok := strings.CutSuffix(name, ":sync"); ok {
			name, props["hive.enable_hms_events_incremental_sync"] = n, "true"
		}
		opts.Catalogs = append(opts.Catalogs, fetest.Catalog{Name: name, Properties: props})
	}
	if u := c.String("truth-url"); u != "" {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return fmt.Errorf("--truth-url %q: want an http(s) URL", u)
		}
		opts.Loader = truthLoader(u)
	}
	closeMetastore, err := devFEMetastoreLoader(c, &opts)
	if err != nil {
		return err
	}
	defer closeMetastore()

	var servers []*fetest.Server
	if c.Bool("independent") {
		for _, a := range addrs {
			s, err := fetest.ListenServer(a, opts)
			if err != nil {
				closeAll(servers)
				return fmt.Errorf("--listen %s: %w", a, err)
			}
			servers = append(servers, s)
		}
	} else {
		cl, err := fetest.ListenCluster(addrs, opts)
		if err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		servers = cl.Servers()
	}
	defer closeAll(servers)

	mode := "one shared cache (Doris cluster)"
	if c.Bool("independent") || len(servers) == 1 {
		mode = "own cache each"
	}
	for i, s := range servers {
		fmt.Fprintf(c.App.Writer, "fake FE %d: %s\n", i, s.URL)
	}
	log.Info("fake FE running", zap.Int("endpoints", len(servers)), zap.String("mode", mode),
		zap.String("user", opts.User), zap.Bool("truth", opts.Loader != nil))

	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("fake FE stopping")
	return nil
}

func closeAll(servers []*fetest.Server) {
	for _, s := range servers {
		s.Close()
	}
}

// feAddrs expands the --listen values, and a single address with --fes N into N
// consecutive ports.
func feAddrs(listen []string, n int) ([]string, error) {
	var addrs []string
	for _, l := range listen {
		for _, a := range strings.Split(l, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("--listen: give at least one address")
	}
	if n < 1 {
		return nil, fmt.Errorf("--fes %d: want 1 or more", n)
	}
	if n == 1 {
		return addrs, nil
	}
	if len(addrs) != 1 {
		return nil, fmt.Errorf("--fes %d needs exactly one --listen address, got %d", n, len(addrs))
	}
	host, portText, err := net.SplitHostPort(addrs[0])
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", addrs[0], err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port+n-1 > 65535 {
		return nil, fmt.Errorf("--listen %q with --fes %d: want a fixed port with room for %d consecutive ports", addrs[0], n, n)
	}
	addrs = addrs[:0]
	for i := range n {
		addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(port+i)))
	}
	return addrs, nil
}

// truthLoader fetches a catalog's truth from an HTTP endpoint (for instance
// one a fake metastore offers). 404 means the catalog does not exist.
func truthLoader(pattern string) func(context.Context, string) (fetest.Truth, error) {
	client := &http.Client{}
	return func(ctx context.Context, catalog string) (fetest.Truth, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		u := strings.ReplaceAll(pattern, "{catalog}", url.PathEscape(catalog))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("truth from %s: %w", u, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("truth from %s: %w", u, fetest.ErrUnknownCatalog)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return nil, fmt.Errorf("truth from %s: HTTP %d: %s", u, resp.StatusCode, body)
		}
		var t fetest.Truth
		if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
			return nil, fmt.Errorf("truth from %s: %w", u, err)
		}
		return t, nil
	}
}
