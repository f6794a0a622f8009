package preflight_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/internal/preflight"
)

// TestEtcdCredentialsAndPermissionsAreChecked enables authentication on a real
// etcd: a user whose role covers another prefix, and a wrong password.
func TestEtcdCredentialsAndPermissionsAreChecked(t *testing.T) {
	w := newWorld(t, fetest.Options{Catalogs: hiveCatalog})
	ctx := context.Background()
	cli := w.etcd.Client
	steps := []func() error{
		func() error { _, err := cli.RoleAdd(ctx, "root"); return err },
		func() error { _, err := cli.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "elsewhere"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "elsewhere", "/other/", clientv3.GetPrefixRangeEnd("/other/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "limited", "pw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "limited", "elsewhere"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("auth set-up step %d: %v", i, err)
		}
	}

	tg := w.target()
	// Authenticating costs a bcrypt hash on the server: slow under the race detector.
	tg.Etcd.Client.DialTimeout = 15 * time.Second
	tg.Etcd.Client.Username, tg.Etcd.Client.Password = "limited", "pw"
	rs := preflight.Run(ctx, tg)
	r := find(t, rs, "etcd read under /hmssync/prod/")
	if r.OK || !strings.Contains(r.Fix, `grant the etcd user "limited"`) || !strings.Contains(r.Fix, "/hmssync/prod/") || !strings.Contains(r.Check, `authenticated as user "limited"`) {
		t.Errorf("a user without permission on the prefix: %+v", r)
	}

	tg.Etcd.Client.Password = "wrong"
	rs = preflight.Run(ctx, tg)
	var failed []preflight.Result
	for _, r := range rs {
		if !r.OK && strings.HasPrefix(r.Check, "etcd") {
			failed = append(failed, r)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Fix, "etcd.password_file") {
		t.Errorf("a wrong password: want one etcd failure naming etcd.password_file, got:\n%s", text(rs))
	}

	tg.Etcd.Client.Username, tg.Etcd.Client.Password = "root", "rootpw"
	if rs := preflight.Run(ctx, tg); !preflight.Passed(rs) {
		t.Errorf("root with its password: want every check to pass:\n%s", text(rs))
	}
}
