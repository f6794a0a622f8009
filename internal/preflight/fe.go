package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/hmssync/hmssync/applier"
)

// checkFE checks that the FE answers and accepts the credentials, then that it
// has each catalog, as the dialect can tell.
func checkFE(ctx context.Context, fe FE, cats []Catalog) []Result {
	if fe.Timeout <= 0 {
		fe.Timeout = applier.DefaultTimeout
	}
	if fe.Dialect == applier.DialectLog {
		return []Result{pass("FE", "dialect log: nothing is sent to an FE")}
	}
	name := fmt.Sprintf("FE %s (%s) answers and accepts user %q", fe.URL, fe.Dialect, fe.User)
	ap, err := applier.New(applier.Config{Dialect: fe.Dialect, URL: fe.URL, User: fe.User, Password: fe.Password, Timeout: fe.Timeout, Client: fe.Client})
	if err != nil {
		return []Result{fail(name, err.Error(), "check fe.url and fe.dialect")}
	}
	cctx, cancel := context.WithTimeout(ctx, fe.Timeout)
	err = ap.Check(cctx)
	cancel()
	if err != nil {
		fix := "is the FE running and is fe.url its HTTP address (Doris: http_port, 8030 by default)?"
		if applier.ClassOf(err) == applier.Auth {
			fix = "the FE refused the credentials or the URL is not an FE: check fe.user and fe.password_file (or HMSSYNC_FE_PASSWORD), and that the user may SHOW and REFRESH the catalogs"
		}
		return []Result{fail(name, err.Error(), fix)}
	}
	rs := []Result{pass(name, "")}
	hc := &http.Client{Timeout: fe.Timeout}
	if fe.Client != nil {
		hc = &http.Client{Transport: fe.Client.Transport, Timeout: fe.Timeout}
	}
	switch fe.Dialect {
	case applier.DialectDoris:
		return append(rs, checkDorisCatalogs(ctx, hc, fe, cats)...)
	case applier.DialectNative:
		return append(rs, checkNativeCatalogs(ctx, hc, fe, cats)...)
	}
	return rs
}

// checkDorisCatalogs reads SHOW CATALOGS once, then each served catalog's
// properties.
func checkDorisCatalogs(ctx context.Context, hc *http.Client, fe FE, cats []Catalog) []Result {
	qctx, cancel := context.WithTimeout(ctx, fe.Timeout)
	defer cancel()
	all, err := dorisQuery(qctx, hc, fe, "SHOW CATALOGS")
	if err != nil {
		return []Result{fail("FE catalogs (SHOW CATALOGS)", err.Error(), "the user needs SHOW on the catalogs hmssync serves")}
	}
	types := map[string]string{}
	for i := range all.rows {
		types[all.cell(i, "CatalogName")] = all.cell(i, "Type")
	}
	var rs []Result
	for _, c := range cats {
		name := fmt.Sprintf("catalog %s: on the FE, of type hms", c.Name)
		typ, ok := types[c.Name]
		switch {
		case !ok:
			rs = append(rs, fail(name, "SHOW CATALOGS does not list it", fmt.Sprintf(
				"create it on the FE (CREATE CATALOG %s PROPERTIES (\"type\"=\"hms\", \"hive.metastore.uris\"=\"%s\")), correct catalogs[].name, or grant fe.user SHOW on it (SHOW CATALOGS lists only the catalogs a user may see)", quoteIdent(c.Name), strings.Join(c.URIs, ","))))
			continue
		case !strings.EqualFold(typ, "hms"):
			rs = append(rs, fail(name, "its type is "+typ, "hmssync serves Hive catalogs (type hms) only: remove it from catalogs or point catalogs[].name at a Hive catalog"))
			continue
		}
		rs = append(rs, pass(name, ""))
		rs = append(rs, checkDorisEventSync(qctx, hc, fe, c.Name))
	}
	return rs
}

// eventSyncProperty is Doris's own HMS event sync for a catalog; on, every FE
// reads the notification log itself as well (reference doris.md §1).
var eventSyncProperty = regexp.MustCompile(`"hive\.enable_hms_events_incremental_sync"\s*=\s*"([^"]*)"`)

func checkDorisEventSync(ctx context.Context, hc *http.Client, fe FE, catalog string) Result {
	name := fmt.Sprintf("catalog %s: the FE's own event sync is off", catalog)
	es, err := dorisEventSync(ctx, hc, fe, catalog)
	switch {
	case err != nil:
		return fail(name, err.Error(), "the user needs SHOW on the catalog; else check the FE's logs")
	case es.On:
		return fail(name, `hive.enable_hms_events_incremental_sync = "true": every FE reads the log as well, doubling the work`, es.Fix(catalog))
	case !es.Set:
		return pass(name, "hive.enable_hms_events_incremental_sync unset (the FE default, enable_hms_events_incremental_sync in fe.conf, must be false too)")
	}
	return pass(name, "hive.enable_hms_events_incremental_sync = "+es.Value)
}

// checkNativeCatalogs asks the native protocol's per-catalog state (404: the FE
// does not have the catalog).
func checkNativeCatalogs(ctx context.Context, hc *http.Client, fe FE, cats []Catalog) []Result {
	var rs []Result
	for _, c := range cats {
		name := fmt.Sprintf("catalog %s: on the FE", c.Name)
		u := strings.TrimRight(fe.URL, "/") + "/api/hmssync/v1/catalogs/" + url.PathEscape(c.Name) + "/state"
		qctx, cancel := context.WithTimeout(ctx, fe.Timeout)
		status, err := get(qctx, hc, fe, u)
		cancel()
		switch {
		case err != nil:
			rs = append(rs, fail(name, err.Error(), "is the FE still running at fe.url?"))
		case status == http.StatusNotFound:
			rs = append(rs, fail(name, "GET "+u+": 404", "create the catalog on the FE or correct catalogs[].name"))
		case status/100 != 2:
			rs = append(rs, fail(name, fmt.Sprintf("GET %s: HTTP %d", u, status), "see docs/fe-protocol.md §5 for what the FE must answer"))
		default:
			rs = append(rs, pass(name, ""))
		}
	}
	return rs
}

func get(ctx context.Context, hc *http.Client, fe FE, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(fe.User, fe.Password)
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("no answer within %s (fe.timeout)", fe.Timeout.Round(time.Millisecond))
		}
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// quoteIdent backtick-quotes a Doris identifier, doubling embedded backticks.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
