package preflight_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/sasltest"
	"github.com/hmssync/hmssync/internal/preflight"
	"github.com/hmssync/hmssync/internal/testutil/kdctest"
)

// A catalog with hms_auth is checked over Kerberos, against a real KDC and a
// metastore that requires SASL: with the right keytab every metastore check
// passes; with another principal's keytab the check fails and says to fix
// hms_auth rather than the metastore's address.
func TestKerberizedMetastoreIsCheckedOverKerberos(t *testing.T) {
	kdc := kdctest.Start(t, kdctest.Options{})
	kdc.AddPrincipal(t, "sync")
	kdc.AddPrincipal(t, "other")
	kdc.AddPrincipal(t, "hive/localhost")
	kt, err := keytab.Load(kdc.Keytab(t, "hive/localhost"))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, fetest.Options{Catalogs: hiveCatalog})
	sasl := hmstest.NewServer(hmstest.WithSASL(&sasltest.Acceptor{Keytab: kt}))
	t.Cleanup(sasl.Close)
	if err := sasl.CreateDatabase("sales"); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(sasl.Addr())
	target := w.target()
	target.Catalogs[0].URIs = []string{"thrift://" + net.JoinHostPort("localhost", port)}
	target.Catalogs[0].Kerberos = &hms.KerberosConfig{
		ServicePrincipal: "hive/_HOST@" + kdc.Realm, ClientPrincipal: "sync@" + kdc.Realm,
		Keytab: kdc.Keytab(t, "sync"), Krb5Conf: kdc.Krb5Conf,
	}
	rs := preflight.Run(context.Background(), target)
	r := find(t, rs, "catalog hive: metastore")
	if !r.OK || !strings.Contains(r.Check, "Kerberos as sync@") {
		t.Fatalf("the Kerberized metastore with the right keytab: %+v\n%s", r, text(rs))
	}
	if r := find(t, rs, "catalog hive: notification log readable"); !r.OK {
		t.Fatalf("the notification log over Kerberos: %+v", r)
	}

	// Plain Thrift against the same metastore: named as Kerberos missing.
	plain := target
	plain.Catalogs = []preflight.Catalog{target.Catalogs[0]}
	plain.Catalogs[0].Kerberos = nil
	if r := find(t, preflight.Run(context.Background(), plain), "catalog hive: metastore"); r.OK ||
		!strings.Contains(r.Detail+r.Fix, "sasl") {
		t.Fatalf("a SASL metastore checked without hms_auth: %+v; want a failure naming hive.metastore.sasl.enabled", r)
	}

	wrong := target
	wrong.Catalogs = []preflight.Catalog{target.Catalogs[0]}
	k := *target.Catalogs[0].Kerberos
	k.Keytab = kdc.Keytab(t, "other") // has no key of sync@
	wrong.Catalogs[0].Kerberos = &k
	r = find(t, preflight.Run(context.Background(), wrong), "catalog hive: metastore")
	if r.OK || !strings.Contains(r.Fix, "hms_auth") {
		t.Fatalf("another principal's keytab: %+v; want a failure whose fix names hms_auth", r)
	}
}
