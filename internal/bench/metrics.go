package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// stageTimes are the master's cumulative time in each stage of a step, from
// its own /metrics histograms: the breakdown of a batch's wall time.
type stageTimes struct {
	fetch, decode, apply, commit       float64 // seconds
	fetches, decodes, applies, commits float64 // observations
	fullRefreshes                      float64 // hmssync_full_refreshes_total, every reason
}

// scrapeStages reads the stage histograms from a sidecar's /metrics.
func scrapeStages(ctx context.Context, addr string) (stageTimes, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return stageTimes{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return stageTimes{}, fmt.Errorf("scrape %s/metrics: %w", addr, err)
	}
	defer resp.Body.Close()
	var st stageTimes
	fields := map[string]*float64{
		"hmssync_fetch_duration_seconds_sum":    &st.fetch,
		"hmssync_fetch_duration_seconds_count":  &st.fetches,
		"hmssync_decode_duration_seconds_sum":   &st.decode,
		"hmssync_decode_duration_seconds_count": &st.decodes,
		"hmssync_commit_duration_seconds_sum":   &st.commit,
		"hmssync_commit_duration_seconds_count": &st.commits,
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(rest[i+1:], 64)
		if err != nil {
			continue
		}
		if name == "hmssync_full_refreshes_total" {
			st.fullRefreshes += v
			continue
		}
		if p := fields[name]; p != nil {
			*p += v
			continue
		}
		// Only batches of changes, not full refreshes.
		if strings.Contains(rest, `kind="changes"`) {
			switch name {
			case "hmssync_apply_duration_seconds_sum":
				st.apply += v
			case "hmssync_apply_duration_seconds_count":
				st.applies += v
			}
		}
	}
	return st, sc.Err()
}

// perBatchMS is the mean milliseconds per observation of each stage between
// two scrapes.
func (b stageTimes) perBatchMS(a stageTimes) map[string]float64 {
	mean := func(sum, n float64) float64 {
		if n <= 0 {
			return 0
		}
		return sum / n * 1000
	}
	return map[string]float64{
		"fetch":  mean(b.fetch-a.fetch, b.fetches-a.fetches),
		"decode": mean(b.decode-a.decode, b.decodes-a.decodes),
		"apply":  mean(b.apply-a.apply, b.applies-a.applies),
		"commit": mean(b.commit-a.commit, b.commits-a.commits),
	}
}

// freeAddress finds a free local port for a sidecar's HTTP surface (the bench
// scrapes the master's /metrics). Another process could take it before the
// sidecar listens; the sidecar would then fail to start and the run report it.
func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// scrapeValues reads the samples named in want from a sidecar's /metrics,
// each summed over its label sets (a figure missing from the page is absent
// from the result).
func scrapeValues(ctx context.Context, hc *http.Client, addr string, want ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s/metrics: %w", addr, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		name, _, _ := strings.Cut(line[:i], "{")
		name, _, _ = strings.Cut(name, " ")
		for _, w := range want {
			if name == w {
				if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
					out[name] += v
				}
			}
		}
	}
	return out, sc.Err()
}
