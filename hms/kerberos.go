package hms

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/hmssync/hmssync/hms/internal/sasl"
)

// KerberosConfig makes every connection authenticate with SASL GSSAPI, as a
// metastore with hive.metastore.sasl.enabled=true requires. The configuration
// names in its errors are the sidecar's (hms_auth.*); `events tail` has flags
// of the same names.
type KerberosConfig struct {
	// ServicePrincipal is the metastore's (hive.metastore.kerberos.principal),
	// e.g. hive/_HOST@EXAMPLE.COM: _HOST becomes the lower-cased host of the
	// URI being dialled, as Hadoop does.
	ServicePrincipal string
	// ClientPrincipal is this client's, name@REALM (REALM defaults to
	// krb5.conf's default_realm). With a ticket cache it may be empty: the
	// cache's principal is used.
	ClientPrincipal string
	// Keytab holds ClientPrincipal's keys; tickets are obtained and renewed from
	// it. Empty: the ticket cache CCache is used instead.
	Keytab string
	// CCache is the ticket cache (KRB5CCNAME) used when Keytab is empty; it is
	// read again whenever it changes, so that an external kinit renews it.
	CCache string
	// Krb5Conf is the krb5.conf (KRB5_CONFIG, else /etc/krb5.conf).
	Krb5Conf string
}

// kerberos is the client's Kerberos login, shared by its connections: a
// gokrb5 client that renews its ticket-granting ticket before it expires (and
// logs in again from the keytab when it cannot renew).
type kerberos struct {
	cfg   KerberosConfig
	conf  *config.Config
	user  string
	realm string

	mu       sync.Mutex // held while logging in
	cl       *client.Client
	ccacheAt time.Time // modification time of the cache cl was made from
}

// usesKeytab reports whether logins come from a keytab (else a ticket cache).
func (k *kerberos) usesKeytab() bool { return k.cfg.Keytab != "" }

// newKerberos checks the configuration and reads its files; it does not reach
// the KDC. Every error names the key to fix.
func newKerberos(cfg KerberosConfig) (*kerberos, error) {
	if err := checkServicePrincipal(cfg.ServicePrincipal); err != nil {
		return nil, err
	}
	conf, err := config.Load(cfg.Krb5Conf)
	if err != nil {
		return nil, configErrorf("hms_auth.krb5_conf: reading %s: %v", cfg.Krb5Conf, err)
	}
	k := &kerberos{cfg: cfg, conf: conf}
	if cfg.ClientPrincipal != "" {
		name, realm, _ := strings.Cut(cfg.ClientPrincipal, "@")
		if realm == "" {
			realm = conf.LibDefaults.DefaultRealm
		}
		if name == "" || realm == "" || strings.Contains(realm, "@") {
			return nil, configErrorf("hms_auth.client_principal %q: want name@REALM (or a name, with default_realm set in %s)", cfg.ClientPrincipal, cfg.Krb5Conf)
		}
		k.user, k.realm = name, realm
	}
	if cfg.Keytab != "" {
		if k.user == "" {
			return nil, configErrorf("hms_auth.client_principal is empty: with hms_auth.keytab, name the principal whose keys it holds")
		}
		// Only readable here: whose keys it holds is checked at each login, so
		// that a sidecar given the wrong keytab stays up (not ready) and picks
		// up a corrected one (a rotated Secret) without a restart.
		if _, err := keytab.Load(cfg.Keytab); err != nil {
			return nil, configErrorf("hms_auth.keytab: reading %s: %v", cfg.Keytab, err)
		}
		return k, nil
	}
	if _, err := ccachePath(cfg.CCache); err != nil {
		return nil, err
	}
	return k, nil
}

// checkServicePrincipal accepts service/host@REALM with host possibly _HOST.
func checkServicePrincipal(p string) error {
	name, _, _ := strings.Cut(p, "@")
	svc, host, ok := strings.Cut(name, "/")
	if p == "" || !ok || svc == "" || host == "" || strings.Contains(host, "/") {
		return configErrorf("hms_auth.service_principal %q: want the metastore's principal service/host@REALM, e.g. hive/_HOST@EXAMPLE.COM "+
			"(its hive.metastore.kerberos.principal)", p)
	}
	return nil
}

// servicePrincipal is the configured principal for the metastore at host.
func (k *kerberos) servicePrincipal(host string) string {
	return strings.ReplaceAll(k.cfg.ServicePrincipal, "_HOST", strings.ToLower(host))
}

// keytabHolds reports whether kt has a key for user@realm.
func keytabHolds(kt *keytab.Keytab, user, realm string) error {
	var held []string
	for _, e := range kt.Entries {
		p := strings.Join(e.Principal.Components, "/") + "@" + e.Principal.Realm
		if p == user+"@"+realm {
			return nil
		}
		if !slices.Contains(held, p) {
			held = append(held, p)
		}
	}
	if len(held) == 0 {
		return errors.New("it holds no keys")
	}
	return fmt.Errorf("it has no key for %s@%s (it holds %s)", user, realm, strings.Join(held, ", "))
}

// ccachePath is the file of a ticket cache named as KRB5CCNAME names it.
func ccachePath(name string) (string, error) {
	if name == "" {
		return "", configErrorf("hms_auth.keytab is empty and KRB5CCNAME is not set: give a keytab, or kinit and set KRB5CCNAME to the ticket cache")
	}
	if typ, rest, ok := strings.Cut(name, ":"); ok && len(typ) > 1 {
		if typ != "FILE" {
			return "", configErrorf("ticket cache %q (KRB5CCNAME): only FILE caches can be read; use hms_auth.keytab, or a FILE: cache", name)
		}
		name = rest
	}
	if _, err := os.Stat(name); err != nil {
		return "", configErrorf("ticket cache %s (KRB5CCNAME): %v; run kinit, or use hms_auth.keytab", name, err)
	}
	return name, nil
}

// client returns a logged-in gokrb5 client, logging in first when there is
// none yet or the ticket cache changed. It reaches the KDC.
func (k *kerberos) client() (*client.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.usesKeytab() {
		if k.cl == nil {
			// Read again at each login: the keytab may have been replaced.
			kt, err := keytab.Load(k.cfg.Keytab)
			if err != nil {
				return nil, configErrorf("hms_auth.keytab: reading %s: %v", k.cfg.Keytab, err)
			}
			if err := keytabHolds(kt, k.user, k.realm); err != nil {
				return nil, configErrorf("hms_auth.keytab %s: %v; export the keys of hms_auth.client_principal %s@%s into it",
					k.cfg.Keytab, err, k.user, k.realm)
			}
			cl := client.NewWithKeytab(k.user, k.realm, kt, k.conf, client.DisablePAFXFAST(true))
			if err := cl.Login(); err != nil {
				cl.Destroy()
				return nil, k.loginError(err)
			}
			k.cl = cl
		}
		return k.cl, nil
	}
	path, err := ccachePath(k.cfg.CCache)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, configErrorf("ticket cache %s (KRB5CCNAME): %v", path, err)
	}
	if k.cl != nil && st.ModTime().Equal(k.ccacheAt) {
		return k.cl, nil
	}
	cc, err := credentials.LoadCCache(path)
	if err != nil {
		return nil, configErrorf("ticket cache %s (KRB5CCNAME): %v; run kinit again", path, err)
	}
	cl, err := client.NewFromCCache(cc, k.conf, client.DisablePAFXFAST(true))
	if err != nil {
		return nil, configErrorf("ticket cache %s (KRB5CCNAME): %v; run kinit again (the ticket may have expired), or use hms_auth.keytab", path, err)
	}
	if want := k.cfg.ClientPrincipal; want != "" {
		got := cl.Credentials.CName().PrincipalNameString() + "@" + cl.Credentials.Realm()
		if got != want && got != k.user+"@"+k.realm {
			cl.Destroy()
			return nil, configErrorf("ticket cache %s holds tickets of %s, not hms_auth.client_principal %s: kinit as %s", path, got, want, want)
		}
	}
	if k.cl != nil {
		k.cl.Destroy()
	}
	k.cl, k.ccacheAt = cl, st.ModTime()
	return cl, nil
}

// mechanism returns the GSSAPI mechanism for one connection to host.
func (k *kerberos) mechanism(host string) (*sasl.GSSAPI, error) {
	cl, err := k.client()
	if err != nil {
		return nil, err
	}
	mech, err := sasl.NewGSSAPI(cl, k.servicePrincipal(host))
	if err != nil {
		return nil, configErrorf("hms_auth.service_principal: %v", err)
	}
	return mech, nil
}

// relogin drops the login, so that the next connection logs in afresh: after
// the metastore or the KDC refused a ticket that may have expired.
func (k *kerberos) relogin() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cl != nil {
		k.cl.Destroy()
		k.cl = nil
	}
}

// close ends the login and its renewal goroutine.
func (k *kerberos) close() { k.relogin() }

// CheckKerberos checks a Kerberos configuration as NewClient would, reading
// its files but not reaching the KDC: for validating a configuration at start.
func CheckKerberos(cfg KerberosConfig) error {
	_, err := newKerberos(cfg)
	return err
}
