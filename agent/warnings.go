package agent

import "sync"

// catalogWarnings are findings about a catalog that come from outside the sync
// loop (the sidecar's start-up checks, such as Doris's own event sync still on
// for it), shown in /status until cleared. Bounded: one per catalog the agent
// serves, each shortened to maxStatusError.
type catalogWarnings struct {
	mu sync.Mutex
	by map[string]string
}

// SetCatalogWarning shows warning in the /status of catalog ("" clears it). A
// catalog the agent does not serve is ignored.
func (a *Agent) SetCatalogWarning(catalog, warning string) {
	known := false
	for _, l := range a.loops {
		known = known || l.cat.Name == catalog
	}
	if !known {
		return
	}
	a.warnings.mu.Lock()
	defer a.warnings.mu.Unlock()
	if a.warnings.by == nil {
		a.warnings.by = map[string]string{}
	}
	if warning == "" {
		delete(a.warnings.by, catalog)
		return
	}
	a.warnings.by[catalog] = shorten(warning, maxStatusError)
}

func (w *catalogWarnings) of(catalog string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.by[catalog]
}
