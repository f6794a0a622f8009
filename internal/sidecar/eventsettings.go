package sidecar

import (
	"context"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/preflight"
)

// settingsCheck is one catalog's metastore, for the event-settings findings
// logged at start.
type settingsCheck struct {
	client  *hms.Client
	catalog preflight.Catalog
}

// logEventSettings reads each catalog's metastore event settings (the findings
// of `hmssync check`, preflight.EventSettings) and logs each failed or
// unverified one as a warning: a metastore that logs no INSERT events or keeps
// its log for minutes loses changes silently, and the operator should hear of
// it. A warning, not a refusal: the operator may know better (a listener of
// their own, a setting hidden from get_config_value). Each call is bounded by
// the catalog's hms_timeout; the whole by ctx, whose end stops it.
func (s *Sidecar) logEventSettings(ctx context.Context, log *zap.Logger) {
	var wg sync.WaitGroup
	for _, sc := range s.settings {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clog := log.With(zap.String("catalog", sc.catalog.Name))
			warned := 0
			rs := preflight.EventSettings(ctx, sc.client, sc.catalog)
			for _, r := range rs {
				if r.OK && !r.Unverified {
					continue
				}
				warned++
				msg := "metastore event setting wrong"
				switch {
				case r.OK:
					msg = "metastore event setting could not be verified"
				case strings.HasPrefix(r.Detail, "get_config_value: "):
					msg = "metastore event settings could not be read"
				}
				clog.Warn(msg, zap.String("check", r.Check), zap.String("detail", r.Detail), zap.String("fix", r.Fix))
			}
			if ctx.Err() == nil {
				clog.Info("metastore event settings read", zap.Int("findings", len(rs)), zap.Int("warnings", warned))
			}
		}()
	}
	wg.Wait()
}
