package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hmssync/hmssync/internal/names"
	"github.com/hmssync/hmssync/internal/redact"
)

var eventTypeRe = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// maxTxnLookbackEvents bounds catalogs[].txn_lookback_events: a read of ten
// million events takes minutes of the metastore at a member's start.
const maxTxnLookbackEvents = 10_000_000

// Validate checks a configuration built in code (the demo's, the bench's) as
// Load checks a loaded one, except that a Kerberos login's files are not read
// (Sources.CheckKerberos).
func (c *Config) Validate() error { return c.validate(nil) }

// validate checks every value and the timing invariants, and reports all problems
// at once, each naming the key, the bad value and what is allowed. checkKerberos
// is Sources.CheckKerberos.
func (c *Config) validate(checkKerberos func(Kerberos) error) error {
	var p problems
	c.validateNames(&p)
	tlsSet := c.Etcd.TLS.CAFile != "" || c.Etcd.TLS.CertFile != ""
	for i, ep := range c.Etcd.Endpoints {
		c.Etcd.Endpoints[i] = EtcdEndpointURL(ep, tlsSet)
	}
	c.Etcd.validate(&p, c.FE.PasswordFile)
	c.FE.validate(&p)
	if len(c.Catalogs) == 0 {
		p.bad("catalogs", "[]", "want at least one catalog")
	}
	for i := range c.Catalogs {
		c.validateCatalog(&p, i, checkKerberos)
	}
	c.validateServing(&p)
	return errors.Join(p.errs...)
}

// problems collects what is wrong with a configuration, so that an operator
// sees every bad key in one go rather than one per start.
type problems struct{ errs []error }

// bad records that key holds val, and what is wanted instead.
func (p *problems) bad(key string, val any, want string) {
	p.errs = append(p.errs, fmt.Errorf("%s = %s: %s", key, show(val), want))
}

// named records a name rule's error (internal/names) for key.
func (p *problems) named(key string, err error) {
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s = %w", key, err))
	}
}

// add records an error that names its key itself.
func (p *problems) add(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

// validateNames checks the names that become parts of etcd keys.
func (c *Config) validateNames(p *problems) {
	p.named("cluster", names.Cluster(c.Cluster))
	if c.Member == "" {
		p.bad("member", c.Member, "want a member name; it defaults to $POD_NAME, else the hostname, and neither is available")
	} else {
		p.named("member", names.Member(c.Member))
	}
}

// validate checks the etcd section; fePasswordFile is checked for readability
// along with etcd's files.
func (e Etcd) validate(p *problems, fePasswordFile string) {
	if e.EmbeddedDir == "" {
		e.validateEndpoints(p)
	} else if host, _, err := net.SplitHostPort(e.EmbeddedListen); err != nil {
		p.bad("etcd.embedded_listen", e.EmbeddedListen, "want host:port, e.g. 127.0.0.1:2379")
	} else if !isLoopbackHost(host) && !e.EmbeddedUnsafeRemote {
		p.bad("etcd.embedded_listen", e.EmbeddedListen, "want a loopback address such as 127.0.0.1:2379: the embedded etcd has no TLS and no authentication, so anyone who reaches it can rewrite the cursors; "+
			"set etcd.embedded_listen_unsafe_allow_remote: true to listen there anyway")
	}
	p.named("etcd.prefix", names.Prefix(e.Prefix))
	if e.LeaseTTL < 2*time.Second || e.LeaseTTL > 5*time.Minute || e.LeaseTTL%time.Second != 0 {
		p.bad("etcd.lease_ttl", e.LeaseTTL, "want a whole number of seconds from 2s to 5m (etcd leases count seconds)")
	}
	if e.RequestTimeout <= 0 {
		p.bad("etcd.request_timeout", e.RequestTimeout, "want a positive duration")
	} else if e.LeaseTTL > 0 && e.RequestTimeout >= e.LeaseTTL/3 {
		p.bad("etcd.request_timeout", e.RequestTimeout, fmt.Sprintf("want less than etcd.lease_ttl / 3 (= %s), so that a master notices a lost lease before it expires", e.LeaseTTL/3))
	}
	if e.DialTimeout <= 0 || e.DialTimeout > time.Minute {
		p.bad("etcd.dial_timeout", e.DialTimeout, "want a duration from 1ms to 1m")
	}
	if (e.TLS.CertFile == "") != (e.TLS.KeyFile == "") {
		p.bad("etcd.tls", fmt.Sprintf("cert_file=%q key_file=%q", e.TLS.CertFile, e.TLS.KeyFile), "want both cert_file and key_file, or neither")
	}
	for key, f := range map[string]string{"etcd.tls.ca_file": e.TLS.CAFile, "etcd.tls.cert_file": e.TLS.CertFile, "etcd.tls.key_file": e.TLS.KeyFile, "etcd.password_file": e.PasswordFile, "fe.password_file": fePasswordFile} {
		if f != "" {
			if err := readable(f); err != nil {
				p.bad(key, f, "want a readable file: "+err.Error())
			}
		}
	}
}

// validateEndpoints checks etcd.endpoints of an external etcd.
func (e Etcd) validateEndpoints(p *problems) {
	if len(e.Endpoints) == 0 {
		p.bad("etcd.endpoints", e.Endpoints, "want at least one URL such as http://10.0.0.1:2379, or set etcd.embedded_dir")
	}
	tlsSet := e.TLS.CAFile != "" || e.TLS.CertFile != ""
	for i, ep := range e.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Port() == "" || u.User != nil {
			want := "want http://host:port, https://host:port or host:port"
			if redact.HasUserInfo(ep) {
				want = "want no user information in the URL: use etcd.username and etcd.password_file or HMSSYNC_ETCD_PASSWORD"
			}
			p.bad(fmt.Sprintf("etcd.endpoints[%d]", i), redact.URL(ep), want)
			continue
		}
		if tlsSet && u.Scheme != "https" {
			p.bad(fmt.Sprintf("etcd.endpoints[%d]", i), redact.URL(ep), "etcd.tls is set: want an https:// endpoint")
		}
	}
}

// validate checks the fe section, its TLS files included.
func (f FE) validate(p *problems) {
	if redact.HasUserInfo(f.URL) {
		p.bad("fe.url", redact.URL(f.URL), "want no user information in the URL: use fe.user and fe.password_file or HMSSYNC_FE_PASSWORD")
	} else if u, err := url.Parse(f.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.bad("fe.url", f.URL, "want http://host:port or https://host:port")
	} else if u.RawQuery != "" || (u.Path != "" && u.Path != "/") {
		p.bad("fe.url", f.URL, "want the FE's base URL without a path or query, e.g. http://127.0.0.1:8030")
	}
	if _, err := url.Parse(f.URL); err == nil {
		_, err := FEHTTPClient(f)
		p.add(err)
	}
	switch f.Dialect {
	case "doris", "native", "log":
	default:
		p.bad("fe.dialect", f.Dialect, "want doris, native or log")
	}
	if f.Dialect == "doris" && f.User == "" {
		p.bad("fe.user", f.User, "want the Doris user hmssync logs in as (it needs SHOW on the catalogs)")
	}
	if f.Timeout <= 0 || f.Timeout > 10*time.Minute {
		p.bad("fe.timeout", f.Timeout, "want a duration from 1ms to 10m")
	}
	switch f.Scope {
	case "auto", "cluster", "local":
	default:
		p.bad("fe.scope", f.Scope, "want auto (the dialect's own), cluster (only the master applies) or local (every sidecar applies)")
	}
	if f.HealthInterval <= 0 || f.HealthInterval > 10*time.Minute {
		p.bad("fe.health_interval", f.HealthInterval, "want a duration from 1ms to 10m")
	}
	if f.UnhealthyGrace < f.HealthInterval {
		p.bad("fe.unhealthy_grace", f.UnhealthyGrace, fmt.Sprintf("want at least fe.health_interval (%s): a master resigns only after its FE failed for this long", f.HealthInterval))
	}
}

// validateCatalog checks catalogs[i]: its name (unique among the earlier
// ones), its metastore connection and how its log is read and filtered.
func (c *Config) validateCatalog(p *problems, i int, checkKerberos func(Kerberos) error) {
	cat := c.Catalogs[i]
	k := func(s string) string { return fmt.Sprintf("catalogs[%d].%s", i, s) }
	if err := names.Catalog(cat.Name); err != nil {
		p.named(k("name"), err)
	} else {
		for j := range i {
			if names.SameCatalog(c.Catalogs[j].Name, cat.Name) {
				p.bad(k("name"), cat.Name, fmt.Sprintf("want a unique name; catalogs[%d] is %q, the same catalog (names are compared without regard to case, as Doris does)", j, c.Catalogs[j].Name))
				break
			}
		}
	}
	cat.validateMetastore(p, i, checkKerberos)
	if cat.BatchSize < 1 || cat.BatchSize > 100000 {
		p.bad(k("batch_size"), cat.BatchSize, "want 1 to 100000 events")
	}
	if cat.TxnTimeout < time.Second || cat.TxnTimeout > 7*24*time.Hour {
		p.bad(k("txn_timeout"), cat.TxnTimeout, "want a duration from 1s to 168h (the metastore's hive.txn.timeout, 300s by default)")
	}
	if cat.PollInterval < 10*time.Millisecond || cat.PollInterval > time.Hour {
		p.bad(k("poll_interval"), cat.PollInterval, "want a duration from 10ms to 1h")
	}
	if cat.BusyPoll != busyPollUnset && (cat.BusyPoll < time.Millisecond || cat.BusyPoll > cat.PollInterval) {
		p.bad(k("busy_poll_interval"), cat.BusyPoll, fmt.Sprintf("want a duration from 1ms up to poll_interval (%s)", cat.PollInterval))
	}
	if cat.TxnLookbackEvents < 0 || cat.TxnLookbackEvents > maxTxnLookbackEvents {
		p.bad(k("txn_lookback_events"), cat.TxnLookbackEvents, fmt.Sprintf("want 0 (no look-back) to %d events", maxTxnLookbackEvents))
	}
	for j, t := range cat.SkipEventTypes {
		if !eventTypeRe.MatchString(t) {
			p.bad(fmt.Sprintf("catalogs[%d].skip_event_types[%d]", i, j), t, "want an HMS event type such as CREATE_FUNCTION or UPDATE_TBL_COL_STAT_EVENT (upper case)")
		}
	}
	for j, pat := range cat.Include {
		if _, err := CompileFull(pat); err != nil {
			p.bad(fmt.Sprintf("catalogs[%d].include[%d]", i, j), pat, "want a regular expression (RE2 syntax) on db.table: "+err.Error())
		}
	}
	for j, pat := range cat.Exclude {
		if _, err := CompileFull(pat); err != nil {
			p.bad(fmt.Sprintf("catalogs[%d].exclude[%d]", i, j), pat, "want a regular expression (RE2 syntax) on db.table: "+err.Error())
		}
	}
}

// validateMetastore checks how catalogs[i] reaches its metastore: the URIs,
// TLS, authentication and the Thrift transport.
func (cat Catalog) validateMetastore(p *problems, i int, checkKerberos func(Kerberos) error) {
	k := func(s string) string { return fmt.Sprintf("catalogs[%d].%s", i, s) }
	if len(cat.HMSURIs) == 0 {
		p.bad(k("hms_uris"), cat.HMSURIs, "want at least one thrift://host:port")
	}
	for j, uri := range cat.HMSURIs {
		if redact.HasUserInfo(uri) {
			p.bad(fmt.Sprintf("catalogs[%d].hms_uris[%d]", i, j), redact.URL(uri),
				"want no user information in the URI: a metastore URI carries no credentials; the user is catalogs[].hms_user, and passwords belong in files (fe.password_file, etcd.password_file), never in URLs")
			continue
		}
		u, err := url.Parse(uri)
		if err != nil || u.Scheme != "thrift" || u.Hostname() == "" || u.Port() == "" {
			p.bad(fmt.Sprintf("catalogs[%d].hms_uris[%d]", i, j), uri, "want thrift://host:port, e.g. thrift://hms:9083")
		} else if port, _ := strconv.Atoi(u.Port()); port <= 0 || port > 65535 {
			p.bad(fmt.Sprintf("catalogs[%d].hms_uris[%d]", i, j), uri, "want a port from 1 to 65535")
		}
	}
	_, err := cat.HMSTLS.ClientConfig(CatalogTLSKey(i))
	p.add(err)
	// os.Getenv, not Sources.Getenv: KRB5_CONFIG and KRB5CCNAME are the
	// Kerberos library's variables, read from the process as the client will.
	if kc, err := cat.HMSAuth.Kerberos(CatalogAuthKey(i), os.Getenv, checkKerberos); err != nil {
		p.add(err)
	} else if kc != nil && cat.HMSFramed {
		p.bad(k("hms_framed"), cat.HMSFramed, "want false with hms_auth.mechanism kerberos: Hive offers no framed transport with SASL")
	} else if kc != nil && cat.HMSUser != "" {
		p.bad(k("hms_user"), cat.HMSUser, "want it empty with hms_auth.mechanism kerberos: set_ugi is for metastores without SASL; the client principal is the identity")
	}
	if cat.HMSCatalog == "" {
		p.bad(k("hms_catalog"), cat.HMSCatalog, "want the metastore catalog name (Hive's default is hive)")
	}
	if cat.HMSTimeout <= 0 || cat.HMSTimeout > 10*time.Minute {
		p.bad(k("hms_timeout"), cat.HMSTimeout, "want a duration from 1ms to 10m")
	}
}

// validateServing checks what serves the operator: http, log, retry and
// shutdown_timeout.
func (c *Config) validateServing(p *problems) {
	if _, port, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
		p.bad("http.listen", c.HTTP.Listen, "want host:port or :port, e.g. :9108")
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.bad("http.listen", c.HTTP.Listen, "want a port from 0 to 65535")
	}
	switch c.HTTP.Pprof { // agent.PprofAccess's values
	case "off", "loopback", "any":
	default:
		p.bad("http.pprof", c.HTTP.Pprof, "want off, loopback (profiles for clients on this host only) or any")
	}
	if c.HTTP.WaitMaxTimeout < time.Second || c.HTTP.WaitMaxTimeout > 24*time.Hour {
		p.bad("http.wait_max_timeout", c.HTTP.WaitMaxTimeout, "want a duration from 1s to 24h: the longest timeout a /v1/wait request may ask for")
	}
	if c.HTTP.MaxWaiters < 1 || c.HTTP.MaxWaiters > 100000 {
		p.bad("http.max_waiters", c.HTTP.MaxWaiters, "want 1 to 100000 requests of /v1/wait waiting at once")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		p.bad("log.level", c.Log.Level, "want debug, info, warn or error")
	}
	switch c.Log.Format {
	case "", "json", "console":
	default:
		p.bad("log.format", c.Log.Format, `want json, console, or "" (console on a terminal, JSON otherwise)`)
	}
	if c.Retry.Initial <= 0 {
		p.bad("retry.initial", c.Retry.Initial, "want a positive duration")
	}
	if c.Retry.Max < c.Retry.Initial {
		p.bad("retry.max", c.Retry.Max, fmt.Sprintf("want at least retry.initial (%s)", c.Retry.Initial))
	}
	if c.Retry.AuthInterval <= 0 {
		p.bad("retry.auth_interval", c.Retry.AuthInterval, "want a positive duration")
	}
	if c.SelfHeal.MaxPerHour < 1 || c.SelfHeal.MaxPerHour > 3600 {
		p.bad("self_heal.max_per_hour", c.SelfHeal.MaxPerHour, "want 1 to 3600")
	}
	if c.ShutdownTimeout < time.Second || c.ShutdownTimeout > 5*time.Minute {
		p.bad("shutdown_timeout", c.ShutdownTimeout, "want a duration from 1s to 5m")
	}
}

// plainTextWarnings warns about secrets that would travel unencrypted to
// another host: FE basic auth over http://, an etcd password over http://.
func (c *Config) plainTextWarnings(sec Secrets) []string {
	var warns []string
	if u, err := url.Parse(c.FE.URL); err == nil && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) && c.FE.Dialect != "log" && (sec.FEPassword != "" || c.FE.Dialect == "doris") {
		warns = append(warns, fmt.Sprintf("fe.url %s is plain http:// to a host that is not loopback: the FE user and password travel unencrypted; use https:// with fe.tls, or run beside the FE on 127.0.0.1", redact.URL(c.FE.URL)))
	}
	if c.Etcd.EmbeddedDir == "" && c.Etcd.Username != "" {
		for _, ep := range c.Etcd.Endpoints {
			if u, err := url.Parse(ep); err == nil && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
				warns = append(warns, fmt.Sprintf("etcd.endpoints %s is plain http:// to a host that is not loopback: the etcd password travels unencrypted; use https:// with etcd.tls", redact.URL(ep)))
			}
		}
	}
	if c.FE.TLS.InsecureSkipVerify {
		warns = append(warns, "fe.tls.insecure_skip_verify is on: the FE's certificate is not checked, so anyone on the path can pose as the FE and read its password; use it for testing only")
	}
	if c.Etcd.EmbeddedUnsafeRemote {
		warns = append(warns, "etcd.embedded_listen_unsafe_allow_remote is on: the embedded etcd at "+c.Etcd.EmbeddedListen+" accepts anyone who reaches it, without TLS or authentication")
	}
	return warns
}

// isLoopbackHost reports whether host (a name or an address) is this machine
// only: "localhost" or a loopback IP. "" (every interface) is not.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CompileFull compiles a pattern that must match the whole subject.
func CompileFull(p string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + p + `)$`)
}

func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	default:
		return fmt.Sprint(x)
	}
}

// readSecrets reads the passwords (ReadPassword: the file, else the
// environment), and keeps the warnings about them for the logger.
func readSecrets(c *Config, getenv func(string) string) (Secrets, error) {
	var s Secrets
	var errs []error
	read := func(file, env, key string) string {
		pw, warns, err := ReadPassword(file, key, env, getenv)
		if err != nil {
			errs = append(errs, err)
		}
		s.Warnings = append(s.Warnings, warns...)
		return pw
	}
	s.FEPassword = read(c.FE.PasswordFile, "HMSSYNC_FE_PASSWORD", "fe.password_file")
	s.EtcdPassword = read(c.Etcd.PasswordFile, "HMSSYNC_ETCD_PASSWORD", "etcd.password_file")
	if c.Etcd.Username != "" && s.EtcdPassword == "" && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("etcd.username = %q: want a password in etcd.password_file or HMSSYNC_ETCD_PASSWORD", c.Etcd.Username))
	}
	return s, errors.Join(errs...)
}
