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
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/agent"
	"github.com/hmssync/hmssync/internal/config"
)

// waitCommand is `hmssync wait`: it calls a sidecar's GET /v1/wait and says in
// one line whether the FE caught up with the metastore (SPEC §7). Exit 0 caught
// up, 2 timed out, 1 any other error.
func waitCommand() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "block until the FE has applied the metastore's changes up to now (read your writes)",
		ArgsUsage: " ",
		Description: `Reads the metastore's current event id through a sidecar and waits until that
sidecar's FE (--scope member) or every live member's (--scope cluster) has applied
it; with --db (and --table) only that database's (table's) newest change counts
where the metastore can say so. Exit status: 0 caught up, 2 timed out, 1 error.
The sidecar is --url (default http://127.0.0.1:9108), or the http.listen of
--config FILE.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "catalog", Usage: "the catalog to wait for", Required: true},
			&cli.StringFlag{Name: "db", Usage: "wait only for this database's changes"},
			&cli.StringFlag{Name: "table", Usage: "wait only for this table's changes (with --db)"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "give up after this long (exit 2)"},
			&cli.StringFlag{Name: "scope", Value: "member", Usage: "member: this sidecar's FE; cluster: every live member's"},
			&cli.StringFlag{Name: "url", Usage: "the sidecar's HTTP address (default http://127.0.0.1:9108)"},
			&cli.StringFlag{Name: "config", Usage: "read the sidecar's address (http.listen) from this configuration file"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return fmt.Errorf("wait takes no arguments, got %q", c.Args().Slice())
			}
			base, err := waitBaseURL(c.String("url"), c.String("config"))
			if err != nil {
				return err
			}
			q := url.Values{"catalog": {c.String("catalog")}, "timeout": {c.Duration("timeout").String()}, "scope": {c.String("scope")}}
			for _, k := range []string{"db", "table"} {
				if v := c.String(k); v != "" {
					q.Set(k, v)
				}
			}
			line, code, err := callWait(c.Context, base+"/v1/wait?"+q.Encode(), c.Duration("timeout"))
			if err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer, line)
			if code != 0 {
				return quietExit(code)
			}
			return nil
		},
	}
}

// quietExit ends the command with an exit status and nothing more to print.
type quietExit int

func (e quietExit) Error() string { return "" }
func (e quietExit) ExitCode() int { return int(e) }

// waitBaseURL is the sidecar to ask: --url, else the http.listen of --config
// (an address on every interface is reached on loopback), else the default.
func waitBaseURL(u, file string) (string, error) {
	switch {
	case u != "" && file != "":
		return "", errors.New("give --url or --config, not both")
	case u != "":
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return "", fmt.Errorf("--url %q: want http://host:port", u)
		}
		return strings.TrimRight(u, "/"), nil
	case file != "":
		cfg, _, err := config.Load(config.Sources{File: file, Getenv: os.Getenv})
		if err != nil {
			return "", err
		}
		host, port, err := net.SplitHostPort(cfg.HTTP.Listen)
		if err != nil {
			return "", fmt.Errorf("http.listen %q of %s: %w", cfg.HTTP.Listen, file, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		return "http://" + net.JoinHostPort(host, port), nil
	}
	return "http://127.0.0.1:9108", nil
}

// callWait asks the endpoint and turns its answer into the line to print and the
// exit status (0 caught up, 2 timed out); err is any other outcome.
func callWait(ctx context.Context, u string, timeout time.Duration) (line string, code int, err error) {
	// The sidecar answers at the timeout; the margin covers reading the
	// target and a slow network.
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 1, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 1, fmt.Errorf("wait: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", 1, fmt.Errorf("wait: reading the answer: %w", err)
	}
	var r agent.WaitResult
	if err := json.Unmarshal(body, &r); err != nil {
		return "", 1, fmt.Errorf("wait: HTTP %d, not the answer of /v1/wait: %q", resp.StatusCode, shortText(string(body)))
	}
	target, applied := "?", "?"
	if r.Target != nil {
		target = fmt.Sprint(*r.Target)
	}
	if r.Applied != nil {
		applied = fmt.Sprint(*r.Applied)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return fmt.Sprintf("caught up: %s at %s (waited %.2f s)", r.Catalog, target, r.Waited), 0, nil
	case http.StatusGatewayTimeout:
		line := fmt.Sprintf("timed out after %.2f s: %s waiting for %s, reached %s", r.Waited, r.Catalog, target, applied)
		if why := r.Reason + r.Error; why != "" {
			line += ": " + why
		}
		return line, 2, nil
	}
	return "", 1, fmt.Errorf("wait: HTTP %d: %s", resp.StatusCode, r.Error)
}

// shortText bounds a text quoted in an error.
func shortText(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
