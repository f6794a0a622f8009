package cursorstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

// Seeds (docs/migrate-from-doris.md). A catalog that Doris's own event sync
// kept up to date until a cut-over is started by `hmssync cursor seed` at the
// event the cut-over chose, instead of by a full refresh: the seed writes the
// committed cursor, its epoch and the metastore's db uuid, as a master's commit
// would, and catalogs/<c>/seed, which says that the cursor was seeded (a cursor
// a master committed says nothing about a member's FE). A member that has no
// durable cursor in the seed's lineage (none at all, or one of an earlier
// epoch) and finds the seed still the start of the committed lineage starts
// from the seed's value without a full refresh (agent: startFromSeed).

// maxSeedBytes bounds a seed key's value: what `cursor seed` writes is a few
// hundred bytes; anything larger was put there by hand and is not read.
const maxSeedBytes = 4 << 10

// Seed is a catalog's seed key as read with the master cursor.
type Seed struct {
	// Exists is false when the key is absent.
	Exists bool
	// Value is the cursor seeded: the first event applied is the next one.
	Value int64 `json:"cursor"`
	// Epoch is the lineage the seed started.
	Epoch int64 `json:"epoch"`
	// EventTime is the unix time (seconds) of the first event after Value
	// when the seed was written (0: none yet).
	EventTime int64 `json:"event_time,omitempty"`
	// From says how the operator chose it ("time 2026-…", "id N", "current").
	From string `json:"from,omitempty"`
	// Bad is why the key's value could not be read ("" when it could): a
	// member then full-refreshes, as without a seed.
	Bad string `json:"-"`
	// Rev is the key's ModRevision, 0 when absent.
	Rev int64 `json:"-"`
}

func (k keys) masterSeed(catalog string) string { return k.masterDir(catalog) + "seed" }

// SeedKey is the key of a catalog's seed, for messages and docs.
func (s *Store) SeedKey(catalog string) string { return s.keys.masterSeed(catalog) }

// parseSeed reads a seed key's kv (nil: absent).
func parseSeed(kv *mvccpb.KeyValue) Seed {
	if kv == nil {
		return Seed{}
	}
	sd := Seed{Exists: true, Rev: kv.ModRevision}
	if len(kv.Value) > maxSeedBytes {
		sd.Bad = fmt.Sprintf("%d bytes, more than the %d a seed takes", len(kv.Value), maxSeedBytes)
		return sd
	}
	if err := json.Unmarshal(kv.Value, &sd); err != nil {
		sd.Bad = "not the JSON `hmssync cursor seed` writes: " + err.Error()
		return sd
	}
	if sd.Value < 0 || sd.Epoch < 0 {
		sd.Bad = fmt.Sprintf("cursor %d, epoch %d: want 0 or more", sd.Value, sd.Epoch)
	}
	if len(sd.From) > 200 {
		sd.From = sd.From[:200]
	}
	return sd
}

// seedFromKVs picks the seed key out of a catalog's committed keys.
func (s *Store) seedFromKVs(catalog string, kvs []*mvccpb.KeyValue) Seed {
	for _, kv := range kvs {
		if string(kv.Key) == s.keys.masterSeed(catalog) {
			return parseSeed(kv)
		}
	}
	return Seed{}
}

// SeedRequest is what `hmssync cursor seed` writes.
type SeedRequest struct {
	// Value is the cursor: the events after it are applied.
	Value int64
	// EventTime and From are recorded in the seed key (see Seed).
	EventTime int64
	From      string
	// Metastore is the metastore's db uuid ("": it offers none), recorded as
	// a master's first commit records it, so that the master takes the seed
	// for the lineage of the metastore it reads.
	Metastore string
	// Force writes over a catalog whose sidecars have already run.
	Force bool
}

// ErrSidecarsRan refuses a seed of a catalog a sidecar has already run
// (without SeedRequest.Force).
var ErrSidecarsRan = errors.New("a sidecar has already run this catalog")

// SeedMaster writes the seed of catalog: the committed cursor, its epoch (0 for
// a new catalog, the old one + 1 with Force, so that members that ran start
// over in the seed's lineage), the metastore's uuid and the seed key, in one
// transaction conditional on what was read. Without Force it refuses with
// ErrSidecarsRan when the catalog has a committed cursor or epoch, when a
// member has a durable cursor for it, or when any member's status key exists
// (a sidecar is running). It returns the committed cursor it replaced.
func (s *Store) SeedMaster(ctx context.Context, catalog string, r SeedRequest) (old Cursor, seed Seed, err error) {
	if err := s.check(catalogName(catalog)); err != nil {
		return Cursor{}, Seed{}, err
	}
	if r.Value < 0 {
		return Cursor{}, Seed{}, fmt.Errorf("seed %d: want an event id, 0 or more", r.Value)
	}
	members := s.keys.root + "/members/"
	const attempts = 5
	for range attempts {
		rctx, cancel := s.request(ctx)
		dir, err := s.cli.Get(rctx, s.keys.masterDir(catalog), clientv3.WithPrefix())
		var mem *clientv3.GetResponse
		if err == nil {
			mem, err = s.cli.Get(rctx, members, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		}
		cancel()
		if err != nil {
			return Cursor{}, Seed{}, fmt.Errorf("read %s and %s from etcd: %w", s.keys.masterDir(catalog), members, err)
		}
		old, _ = s.parseMaster(catalog, dir.Kvs) // a bad old value is replaced (with --force)
		if !r.Force {
			if why := s.ranBefore(catalog, old, mem.Kvs); why != "" {
				return old, Seed{}, fmt.Errorf("seed catalog %s: %w (%s): a seed is for the first start; "+
					"to start over from a seed anyway, stop every sidecar and run again with --force "+
					"(members that ran then start from the seed, without a full refresh)", catalog, ErrSidecarsRan, why)
			}
		}
		epoch := int64(0)
		if old.EpochRev != 0 || old.Exists {
			epoch = old.Epoch + 1
		}
		seed = Seed{Exists: true, Value: r.Value, Epoch: epoch, EventTime: r.EventTime, From: r.From}
		val, _ := json.Marshal(seed)
		ops := []clientv3.Op{
			clientv3.OpPut(s.keys.masterCursor(catalog), formatCursor(r.Value)),
			clientv3.OpPut(s.keys.masterEpoch(catalog), formatCursor(epoch)),
			clientv3.OpPut(s.keys.masterSeed(catalog), string(val)),
			// The open transactions of the cursor replaced are not those of the seed.
			clientv3.OpDelete(s.keys.masterTxns(catalog)),
		}
		if r.Metastore != "" {
			ops = append(ops, clientv3.OpPut(s.keys.masterMetastore(catalog), r.Metastore))
		} else {
			ops = append(ops, clientv3.OpDelete(s.keys.masterMetastore(catalog)))
		}
		conds := []clientv3.Cmp{
			// Nothing under the catalog's directory nor under members/
			// changed since the read (over a range, every key must satisfy
			// the comparison; an empty range compares as revision 0).
			clientv3.Compare(clientv3.ModRevision(s.keys.masterDir(catalog)), "<", dir.Header.Revision+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(members), "<", dir.Header.Revision+1).WithPrefix(),
		}
		rctx, cancel = s.request(ctx)
		var resp *clientv3.TxnResponse
		err = etcdcall.Write(rctx, func(rctx context.Context) (err error) {
			resp, err = s.cli.Txn(rctx).If(conds...).Then(ops...).Commit()
			return err
		})
		cancel()
		if err != nil {
			return old, Seed{}, fmt.Errorf("seed %s at %d: %w: %w (read it with `hmssync cursor get` before retrying)",
				s.keys.masterCursor(catalog), r.Value, ErrOutcomeUnknown, err)
		}
		if resp.Succeeded {
			seed.Rev = resp.Header.Revision
			s.log.Warn("master cursor seeded by operator", zap.String("key", s.keys.masterCursor(catalog)),
				zap.Stringer("old", old), zap.Int64("new", r.Value), zap.Int64("epoch", epoch), zap.String("from", r.From))
			return old, seed, nil
		}
	}
	return Cursor{}, Seed{}, fmt.Errorf("seed %s at %d: the catalog's or the members' keys changed %d times in a row while seeding "+
		"(are sidecars running? stop them first)", s.keys.masterCursor(catalog), r.Value, attempts)
}

// ranBefore says why catalog's keys show that a sidecar has run it ("": they
// do not): the committed cursor, the members' keys (mem: keys only).
func (s *Store) ranBefore(catalog string, old Cursor, mem []*mvccpb.KeyValue) string {
	var why []string
	if old.Exists {
		why = append(why, fmt.Sprintf("%s holds %s", s.keys.masterCursor(catalog), old.Raw))
	} else if old.EpochRev != 0 {
		why = append(why, fmt.Sprintf("%s exists", s.keys.masterEpoch(catalog)))
	}
	for _, kv := range mem {
		kind, member, c := s.keys.parseKey(string(kv.Key))
		switch {
		case kind == kindStatus:
			why = append(why, fmt.Sprintf("member %s is running (%s)", member, kv.Key))
		case kind == kindOther && strings.HasSuffix(string(kv.Key), "/holder"):
			// A sidecar that holds its member name but has not published
			// its status yet (waiting for its FE, say) is running too.
			why = append(why, fmt.Sprintf("a sidecar is running (%s)", kv.Key))
		case (kind == kindMemberCursor || kind == kindMemberEpoch) && c == catalog:
			why = append(why, fmt.Sprintf("member %s has a durable cursor (%s)", member, kv.Key))
		}
		if len(why) >= 5 {
			break
		}
	}
	return strings.Join(why, "; ")
}
