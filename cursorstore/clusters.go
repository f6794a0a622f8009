package cursorstore

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxClustersListed bounds how many cluster names NoClusterError lists: each
// costs one etcd read, and a prefix shared by many clusters is still answered
// at once.
const maxClustersListed = 20

// NoClusterError is CheckExists's answer for a cluster without a single key: a
// typo in the cluster name (or the prefix) more often than a cluster whose
// sidecars never ran.
type NoClusterError struct {
	// Root is the cluster's subtree, <prefix>/<cluster>.
	Root string
	// Clusters are the clusters that have keys under the same prefix, sorted,
	// at most maxClustersListed; More says that there are others.
	Clusters []string
	More     bool
}

func (e *NoClusterError) Error() string {
	list := "none under " + e.Root[:strings.LastIndex(e.Root, "/")+1]
	if len(e.Clusters) > 0 {
		list = strings.Join(e.Clusters, ", ")
		if e.More {
			list += ", …"
		}
	}
	return fmt.Sprintf("no hmssync cluster under %s/ (clusters: %s): check --cluster (or cluster in --config) and --etcd-prefix", e.Root, list)
}

// CheckExists returns a *NoClusterError when no key exists under the cluster's
// subtree: no sidecar of that name has ever run, nor has anyone set a key of it.
func (s *Store) CheckExists(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	root := s.keys.root
	rctx, cancel := s.request(ctx)
	resp, err := s.cli.Get(rctx, root+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return fmt.Errorf("read %s/ from etcd: %w", root, err)
	}
	if resp.Count > 0 {
		return nil
	}
	clusters, more, err := s.clusters(ctx)
	if err != nil {
		return err
	}
	return &NoClusterError{Root: root, Clusters: clusters, More: more}
}

// clusters lists the cluster names under the store's prefix: the first segment
// of every key below it. It reads one key at a time and then skips past that
// cluster's subtree ("<prefix>/<name>0" follows every "<prefix>/<name>/…", as
// '0' follows '/'), so it costs one small read per cluster however many keys
// each holds, up to maxClustersListed.
func (s *Store) clusters(ctx context.Context) (names []string, more bool, err error) {
	prefix := s.keys.root[:strings.LastIndex(s.keys.root, "/")+1]
	end := clientv3.GetPrefixRangeEnd(prefix)
	from := prefix
	for {
		rctx, cancel := s.request(ctx)
		resp, err := s.cli.Get(rctx, from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		cancel()
		if err != nil {
			return nil, false, fmt.Errorf("list the clusters under %s from etcd: %w", prefix, err)
		}
		if len(resp.Kvs) == 0 {
			return names, false, nil
		}
		rest := strings.TrimPrefix(string(resp.Kvs[0].Key), prefix)
		name, _, sub := strings.Cut(rest, "/")
		if sub && name != "" {
			if len(names) == maxClustersListed {
				return names, true, nil
			}
			names = append(names, name)
		}
		// Past this name's subtree, or past this one key when it is no
		// cluster's (a key directly under the prefix).
		from = prefix + name + "0"
		if !sub {
			from = string(resp.Kvs[0].Key) + "\x00"
		}
	}
}
