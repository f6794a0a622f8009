package sidecar

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/preflight"
)

// doubleSyncRecheck is how often the FE is asked again once it answered (an
// operator may turn Doris's sync on or off at any time), doubleSyncRetry how
// soon after it could not answer (a sidecar usually starts before its FE).
const (
	doubleSyncRecheck = time.Minute
	doubleSyncRetry   = 5 * time.Second
)

// warnDoubleSync asks the FE whether Doris's own event sync is still on for a
// catalog this sidecar serves (the finding `hmssync check` fails on:
// preflight.DorisEventSync), until ctx ends: it warns once of each catalog
// where it is on and shows it in /status (note) while it stays on: every FE
// then reads the metastore's log too, and the work is done twice. Only the
// doris dialect's FE answers the SQL it asks; an FE that does not answer is
// the FE health check's business, so that is logged at debug only and asked
// again soon. Each question is bounded by fe.timeout.
func warnDoubleSync(ctx context.Context, cfg config.Config, sec config.Secrets, log *zap.Logger, note func(catalog, warning string)) {
	if cfg.FE.Dialect != applier.DialectDoris {
		return
	}
	client, err := config.FEHTTPClient(cfg.FE)
	if err != nil {
		return // validated at load; New reports it
	}
	fe := preflight.FE{URL: cfg.FE.URL, Dialect: cfg.FE.Dialect, User: cfg.FE.User, Password: sec.FEPassword, Timeout: cfg.FE.Timeout, Client: client}
	warned := map[string]bool{}
	for {
		wait := doubleSyncRecheck
		for _, c := range cfg.Catalogs {
			if ctx.Err() != nil {
				return
			}
			es, err := preflight.DorisEventSync(ctx, fe, c.Name)
			if err != nil {
				log.Debug("could not ask the FE whether its own event sync is on", zap.String("catalog", c.Name), zap.Error(err))
				wait = doubleSyncRetry
				continue
			}
			if !es.On {
				warned[c.Name] = false
				note(c.Name, "")
				continue
			}
			note(c.Name, "Doris's own event sync is on for this catalog (hive.enable_hms_events_incremental_sync): the work is done twice; fix: "+es.Fix(c.Name))
			if !warned[c.Name] {
				warned[c.Name] = true
				log.Warn("Doris's own event sync is on for this catalog: every FE reads the metastore's log as well and the work is done twice; "+
					"turn it off (docs/migrate-from-doris.md)",
					zap.String("catalog", c.Name), zap.String("property", "hive.enable_hms_events_incremental_sync"), zap.String("fix", es.Fix(c.Name)))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
