package sidecar

import (
	"context"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/preflight"
)

// warnDoubleSync asks the FE, once at start, whether Doris's own event sync
// is still on for a catalog this sidecar serves (the finding `hmssync check`
// fails on: preflight.DorisEventSync) and warns of each such catalog: every FE
// then reads the metastore's log too, and the work is done twice. Only the
// doris dialect's FE answers the SQL it asks; an FE that does not answer is
// the FE health check's business, so that is logged at debug only. Each
// question is bounded by fe.timeout, and the whole ends with ctx.
func warnDoubleSync(ctx context.Context, cfg config.Config, sec config.Secrets, log *zap.Logger) {
	if cfg.FE.Dialect != applier.DialectDoris {
		return
	}
	client, err := config.FEHTTPClient(cfg.FE)
	if err != nil {
		return // validated at load; New reports it
	}
	fe := preflight.FE{URL: cfg.FE.URL, Dialect: cfg.FE.Dialect, User: cfg.FE.User, Password: sec.FEPassword, Timeout: cfg.FE.Timeout, Client: client}
	for _, c := range cfg.Catalogs {
		if ctx.Err() != nil {
			return
		}
		es, err := preflight.DorisEventSync(ctx, fe, c.Name)
		if err != nil {
			log.Debug("could not ask the FE whether its own event sync is on", zap.String("catalog", c.Name), zap.Error(err))
			continue
		}
		if es.On {
			log.Warn("Doris's own event sync is on for this catalog: every FE reads the metastore's log as well and the work is done twice; "+
				"turn it off (docs/migrate-from-doris.md)",
				zap.String("catalog", c.Name), zap.String("property", "hive.enable_hms_events_incremental_sync"), zap.String("fix", es.Fix(c.Name)))
		}
	}
}
