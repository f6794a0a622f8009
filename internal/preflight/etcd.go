package preflight

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hmssync/hmssync/internal/etcdcall"
)

// minEtcd is the oldest etcd hmssync works with: its watches ask for progress
// notifications (etcd 3.4+) to know they are fresh.
const minEtcdMajor, minEtcdMinor = 3, 4

// checkEtcd checks each endpoint, then reads, writes and leases under the
// cluster's prefix.
func checkEtcd(ctx context.Context, t Target) []Result {
	e := t.Etcd
	if e.EmbeddedDir != "" {
		return []Result{pass("etcd", "embedded in the sidecar (etcd.embedded_dir "+e.EmbeddedDir+"): it starts with the sidecar, nothing to reach beforehand")}
	}
	cfg := e.Client
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop() // each failure is a Result; the client's retries are noise here
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		// With a username the client authenticates while it connects, so a
		// refused password ends here.
		if cfg.Username != "" && isAuthError(err) {
			return []Result{fail(fmt.Sprintf("etcd credentials of user %q", cfg.Username), fmt.Sprintf("%v: %v", cfg.Endpoints, err),
				etcdAuthFix(cfg.Username, path.Join(e.Prefix, e.Cluster), err))}
		}
		return []Result{fail("etcd client", fmt.Sprintf("%v: %v", cfg.Endpoints, err),
			"check etcd.endpoints (http:// or https:// URLs), etcd.tls and etcd.dial_timeout; is etcd running?")}
	}
	defer cli.Close()

	var rs []Result
	reachable := false
	for _, ep := range cfg.Endpoints {
		name := "etcd endpoint " + ep
		sctx, cancel := context.WithTimeout(ctx, e.RequestTimeout)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil {
			rs = append(rs, fail(name+" answers", err.Error(), etcdReachFix(ep, err)))
			continue
		}
		reachable = true
		rs = append(rs, pass(name+" answers", fmt.Sprintf("member %x, leader %x, raft term %d", st.Header.MemberId, st.Leader, st.RaftTerm)))
		if ok, why := etcdVersionOK(st.Version); ok {
			rs = append(rs, pass(name+" version", st.Version))
		} else {
			rs = append(rs, fail(name+" version", st.Version+": "+why,
				fmt.Sprintf("upgrade etcd to %d.%d or later", minEtcdMajor, minEtcdMinor)))
		}
	}
	if !reachable {
		return rs
	}

	root := path.Join(e.Prefix, e.Cluster)
	rctx, cancel := context.WithTimeout(ctx, e.RequestTimeout)
	resp, err := cli.Get(clientv3.WithRequireLeader(rctx), root+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	readName := fmt.Sprintf("etcd read under %s/ (authenticated as user %q)", root, cfg.Username)
	if cfg.Username == "" {
		readName = "etcd read under " + root + "/ (unauthenticated: no etcd.username)"
	}
	if err != nil {
		return append(rs, fail(readName, err.Error(), etcdAuthFix(cfg.Username, root, err)))
	}
	rs = append(rs, pass(readName, fmt.Sprintf("%d keys", resp.Count)))
	rs = append(rs, checkEtcdWrite(ctx, cli, e, root, t.Member))
	return append(rs, checkSeeds(ctx, cli, e, t.Catalogs)...)
}

// checkEtcdWrite proves what a sidecar does at start: grant a lease, write a key
// bound to it, delete it. The key lives under preflight/ so that nothing hmssync
// watches sees it, and the lease removes it even if the delete is lost.
func checkEtcdWrite(ctx context.Context, cli *clientv3.Client, e Etcd, root, member string) Result {
	name := "etcd lease and write under " + root + "/"
	key := path.Join(root, "preflight", member)
	if member == "" {
		key = path.Join(root, "preflight", "check")
	}
	wctx, cancel := context.WithTimeout(ctx, 3*e.RequestTimeout)
	defer cancel()
	wctx = clientv3.WithRequireLeader(wctx)
	lease, err := cli.Grant(wctx, 10)
	if err != nil {
		return fail(name, "lease grant: "+err.Error(), etcdAuthFix(e.Client.Username, root, err))
	}
	defer func() {
		rctx, cancel := etcdcall.Request(context.WithoutCancel(ctx), e.RequestTimeout)
		defer cancel()
		_, _ = cli.Revoke(rctx, lease.ID)
	}()
	// A member without a leader refuses a write before applying it: etcdcall.Write
	// sends it again, as a sidecar does.
	if err := etcdcall.Write(wctx, func(wctx context.Context) error {
		_, err := cli.Put(wctx, key, "hmssync check "+time.Now().UTC().Format(time.RFC3339), clientv3.WithLease(lease.ID))
		return err
	}); err != nil {
		return fail(name, "put "+key+": "+err.Error(), etcdAuthFix(e.Client.Username, root, err))
	}
	if err := etcdcall.Write(wctx, func(wctx context.Context) error {
		_, err := cli.Delete(wctx, key)
		return err
	}); err != nil {
		return fail(name, "delete "+key+": "+err.Error(), etcdAuthFix(e.Client.Username, root, err))
	}
	return pass(name, "granted a lease, wrote and deleted "+key)
}

func etcdReachFix(ep string, err error) string {
	if strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "tls") {
		return "TLS towards " + ep + " failed: check etcd.tls.ca_file (the CA that signed etcd's certificate) and, for client-certificate authentication, etcd.tls.cert_file and key_file"
	}
	return "is etcd running and is " + ep + " its client URL (etcd.endpoints)? A firewall or a wrong port looks the same; etcd.dial_timeout bounds the wait"
}

func isAuthError(err error) bool {
	return errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(err, rpctypes.ErrInvalidAuthToken) || errors.Is(err, rpctypes.ErrUserEmpty)
}

func etcdAuthFix(user, root string, err error) string {
	switch {
	case isAuthError(err):
		return "etcd refused the credentials: check etcd.username and etcd.password_file (or HMSSYNC_ETCD_PASSWORD)"
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		return fmt.Sprintf("grant the etcd user %q a role with readwrite on the prefix %s/ (etcdctl role grant-permission ROLE --prefix=true readwrite %s/)", user, root, root)
	case errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, context.DeadlineExceeded):
		return "etcd has no leader or answers too slowly: check the etcd cluster's health (etcdctl endpoint health) and etcd.request_timeout"
	}
	return "check etcd's logs; the error above names the request that failed"
}

// etcdVersionOK compares a version such as "3.5.17".
func etcdVersionOK(v string) (bool, string) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false, "not a version number"
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false, "not a version number"
	}
	if major > minEtcdMajor || major == minEtcdMajor && minor >= minEtcdMinor {
		return true, ""
	}
	return false, fmt.Sprintf("older than %d.%d, whose progress notifications hmssync's watches need", minEtcdMajor, minEtcdMinor)
}
