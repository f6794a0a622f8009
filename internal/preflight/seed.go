package preflight

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/cursorstore"
)

// checkSeeds reports, per catalog, how its first start goes: from a seed
// (`hmssync cursor seed`, docs/migrate-from-doris.md), by a full refresh (no
// committed cursor and no seed), or from the committed cursor of sidecars
// that have run. Only an unreadable cursor or seed fails.
func checkSeeds(ctx context.Context, cli *clientv3.Client, e Etcd, cats []Catalog) []Result {
	store := cursorstore.New(cli, e.Prefix, e.Cluster, e.RequestTimeout, zap.NewNop())
	var rs []Result
	for _, c := range cats {
		name := fmt.Sprintf("catalog %s: where the sidecars start", c.Name)
		m, err := store.MasterCursor(ctx, c.Name)
		sd := m.Seed
		switch {
		case err != nil:
			rs = append(rs, fail(name, err.Error(), "correct the key named (hmssync cursor set --force, or cursor seed --force before any sidecar runs)"))
		case sd.Exists && sd.Bad != "":
			rs = append(rs, fail(name, fmt.Sprintf("%s is unreadable: %s", store.SeedKey(c.Name), sd.Bad),
				"seed it again with `hmssync cursor seed --force` (sidecars stopped), or delete the key to start with a full refresh"))
		case sd.Exists && m.Exists && m.Epoch == sd.Epoch:
			rs = append(rs, pass(name, fmt.Sprintf("seeded at cursor %d (epoch %d, %s%s): members without a cursor of their own start there, without a full refresh; committed cursor %d",
				sd.Value, sd.Epoch, sd.From, seedEventTime(sd), m.Value)))
		case sd.Exists:
			rs = append(rs, pass(name, fmt.Sprintf("seeded at cursor %d in epoch %d, but the committed cursor %s is of epoch %d since (the log was reset or the cursor reset): new members full-refresh",
				sd.Value, sd.Epoch, m, m.Epoch)))
		case m.Exists:
			rs = append(rs, pass(name, fmt.Sprintf("not seeded; committed cursor %s (epoch %d): sidecars have run, new members full-refresh", m, m.Epoch)))
		default:
			rs = append(rs, pass(name, "not seeded: the first master full-refreshes the catalog (REFRESH CATALOG); to start where Doris's own sync stopped instead, "+
				"run `hmssync cursor seed` first (docs/migrate-from-doris.md)"))
		}
	}
	return rs
}

func seedEventTime(sd cursorstore.Seed) string {
	if sd.EventTime == 0 {
		return ""
	}
	return ", first event at " + time.Unix(sd.EventTime, 0).UTC().Format(time.RFC3339)
}
