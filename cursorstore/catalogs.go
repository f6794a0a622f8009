package cursorstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Catalogs lists, sorted, the catalogs the cluster knows: those with a key
// under catalogs/<c>/ (cursor, epoch or metastore), a member's durable cursor or
// epoch, or named in a member's status. The operator commands refuse a catalog
// outside this list, so that a typo does not create keys nobody reads.
func (s *Store) Catalogs(ctx context.Context) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	root := s.keys.root
	rctx, cancel := s.request(ctx)
	resp, err := s.cli.Get(rctx, root+"/", clientv3.WithPrefix())
	cancel()
	if err != nil {
		return nil, fmt.Errorf("read %s/ from etcd: %w", root, err)
	}
	seen := map[string]bool{}
	for _, kv := range resp.Kvs {
		switch kind, _, catalog := s.keys.parseKey(string(kv.Key)); kind {
		case kindMasterCursor, kindMasterEpoch, kindMasterMetastore, kindMemberCursor, kindMemberEpoch:
			seen[catalog] = true
		case kindStatus:
			var st MemberStatus
			if json.Unmarshal(kv.Value, &st) == nil {
				for c := range st.Catalogs {
					seen[c] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}
