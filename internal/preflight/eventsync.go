package preflight

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// EventSync is what an FE says of Doris's own HMS event sync for one catalog
// (the catalog property hive.enable_hms_events_incremental_sync, read from
// SHOW CREATE CATALOG): the finding `hmssync check` fails on and `hmssync run`
// warns of.
type EventSync struct {
	// On is true when the property is "true": every FE reads the log as
	// well, doing hmssync's work a second time.
	On bool
	// Set is false when the catalog does not set the property (fe.conf's
	// enable_hms_events_incremental_sync then decides, false by default).
	Set bool
	// Value is the property's value as set.
	Value string
}

// Fix is the statement that turns the sync off for catalog.
func (EventSync) Fix(catalog string) string {
	return fmt.Sprintf(`ALTER CATALOG %s SET PROPERTIES ("hive.enable_hms_events_incremental_sync" = "false")`, quoteIdent(catalog))
}

// DorisEventSync asks a Doris FE (the doris dialect's SQL endpoint) whether
// its own event sync is on for catalog, within fe.Timeout.
func DorisEventSync(ctx context.Context, fe FE, catalog string) (EventSync, error) {
	hc := &http.Client{Timeout: fe.Timeout}
	if fe.Client != nil {
		hc = &http.Client{Transport: fe.Client.Transport, Timeout: fe.Timeout}
	}
	ctx, cancel := context.WithTimeout(ctx, fe.Timeout)
	defer cancel()
	return dorisEventSync(ctx, hc, fe, catalog)
}

func dorisEventSync(ctx context.Context, hc *http.Client, fe FE, catalog string) (EventSync, error) {
	show, err := dorisQuery(ctx, hc, fe, "SHOW CREATE CATALOG "+quoteIdent(catalog))
	if err != nil {
		return EventSync{}, fmt.Errorf("SHOW CREATE CATALOG: %w", err)
	}
	if len(show.rows) == 0 {
		return EventSync{}, fmt.Errorf("SHOW CREATE CATALOG %s returned no row", quoteIdent(catalog))
	}
	m := eventSyncProperty.FindStringSubmatch(show.cell(0, "CreateCatalog"))
	if m == nil {
		return EventSync{}, nil
	}
	return EventSync{On: strings.EqualFold(m[1], "true"), Set: true, Value: m[1]}, nil
}
