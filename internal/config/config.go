package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Config is the sidecar's configuration: the YAML file's schema (SPEC §6),
// also reachable through HMSSYNC_… environment variables and a few flags. Secrets
// are deliberately not fields: they come from files or the environment only and
// live in Secrets, which is never printed.
type Config struct {
	Cluster         string        `yaml:"cluster"`
	Member          string        `yaml:"member"`
	Etcd            Etcd          `yaml:"etcd"`
	FE              FE            `yaml:"fe"`
	Catalogs        []Catalog     `yaml:"catalogs"`
	HTTP            HTTP          `yaml:"http"`
	Log             Log           `yaml:"log"`
	Retry           Retry         `yaml:"retry"`
	SelfHeal        SelfHeal      `yaml:"self_heal"`
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// Etcd is the etcd section: the cluster the sidecars elect a master in, or an
// embedded one (embedded_dir).
type Etcd struct {
	Endpoints      []string      `yaml:"endpoints"`
	Prefix         string        `yaml:"prefix"`
	LeaseTTL       time.Duration `yaml:"lease_ttl"`
	RequestTimeout time.Duration `yaml:"request_timeout"`
	DialTimeout    time.Duration `yaml:"dial_timeout"`
	Username       string        `yaml:"username"`
	PasswordFile   string        `yaml:"password_file"`
	TLS            TLS           `yaml:"tls"`
	EmbeddedDir    string        `yaml:"embedded_dir"`
	EmbeddedListen string        `yaml:"embedded_listen"`
	// EmbeddedUnsafeRemote allows a non-loopback embedded_listen: the embedded
	// etcd has neither TLS nor authentication.
	EmbeddedUnsafeRemote bool `yaml:"embedded_listen_unsafe_allow_remote"`
}

// TLS is the etcd client's TLS (etcd.tls).
type TLS struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// FE is the frontend this sidecar applies changes to (fe).
type FE struct {
	URL            string        `yaml:"url"`
	Dialect        string        `yaml:"dialect"`
	User           string        `yaml:"user"`
	PasswordFile   string        `yaml:"password_file"`
	Timeout        time.Duration `yaml:"timeout"`
	Scope          string        `yaml:"scope"`
	HealthInterval time.Duration `yaml:"health_interval"`
	UnhealthyGrace time.Duration `yaml:"unhealthy_grace"`
	TLS            FETLS         `yaml:"tls"`
}

// Catalog is one catalogs[] entry: a metastore and how its log is read.
type Catalog struct {
	Name           string        `yaml:"name"`
	HMSURIs        []string      `yaml:"hms_uris"`
	HMSCatalog     string        `yaml:"hms_catalog"`
	HMSTimeout     time.Duration `yaml:"hms_timeout"`
	HMSFramed      bool          `yaml:"hms_framed"`
	HMSTLS         HMSTLS        `yaml:"hms_tls"`
	HMSAuth        HMSAuth       `yaml:"hms_auth"`
	HMSUser        string        `yaml:"hms_user"`
	BatchSize      int           `yaml:"batch_size"`
	PollInterval   time.Duration `yaml:"poll_interval"`
	BusyPoll       time.Duration `yaml:"busy_poll_interval"`
	SkipEventTypes []string      `yaml:"skip_event_types"`
	Include        []string      `yaml:"include"`
	Exclude        []string      `yaml:"exclude"`
	// FilterPushdown (default true): when include names its databases
	// literally, the master asks the metastore for their events only.
	FilterPushdown bool `yaml:"filter_pushdown"`
	// TxnTimeout is how long an open transaction that wrote a table is
	// remembered after its first write (the metastore's hive.txn.timeout,
	// which `hmssync check` reports, or longer for writers that run longer).
	TxnTimeout time.Duration `yaml:"txn_timeout"`
	// TxnLookbackEvents is how many events before its cursor a member reads
	// to rebuild an open-transaction state that knows nothing as of it
	// (agent/lookback.go); 0: none.
	TxnLookbackEvents int `yaml:"txn_lookback_events"`
}

// HTTP is the status, metrics and admin listener (http).
type HTTP struct {
	Listen              string `yaml:"listen"`
	AllowRemoteLogLevel bool   `yaml:"allow_remote_log_level"`
	// Pprof is who may read /debug/pprof: off, loopback or any.
	Pprof string `yaml:"pprof"`
	// WaitMaxTimeout is the longest timeout a request of /v1/wait may ask
	// for; MaxWaiters how many requests may wait at once (429 beyond).
	WaitMaxTimeout time.Duration `yaml:"wait_max_timeout"`
	MaxWaiters     int           `yaml:"max_waiters"`
}

// Log is the logger's level and format (log).
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// Retry is the backoff of transient failures and of FE authentication failures (retry).
type Retry struct {
	Initial      time.Duration `yaml:"initial"`
	Max          time.Duration `yaml:"max"`
	AuthInterval time.Duration `yaml:"auth_interval"`
}

// SelfHeal bounds the self-heal of deterministic failures (self_heal).
type SelfHeal struct {
	// MaxPerHour is how many times one table or database may be healed in an
	// hour before the sidecar reports it as looping.
	MaxPerHour int `yaml:"max_per_hour"`
}

// Secrets are the passwords, read from files or the environment. They are never
// logged, printed or shown in /status.
type Secrets struct {
	FEPassword   string
	EtcdPassword string
	// Warnings about where they came from (a file others may read), for the
	// log once there is one.
	Warnings []string
}

// Default is the configuration before the file, the environment and the
// flags are applied.
func Default() Config {
	return Config{
		Cluster: "default",
		Etcd: Etcd{
			Endpoints:      []string{"http://127.0.0.1:2379"},
			Prefix:         "/hmssync",
			LeaseTTL:       10 * time.Second,
			RequestTimeout: 3 * time.Second,
			DialTimeout:    5 * time.Second,
			EmbeddedListen: "127.0.0.1:2379",
		},
		FE: FE{
			URL:            "http://127.0.0.1:8030",
			Dialect:        "doris",
			User:           "root",
			Timeout:        30 * time.Second,
			Scope:          "auto",
			HealthInterval: 5 * time.Second,
			UnhealthyGrace: 30 * time.Second,
		},
		HTTP:            HTTP{Listen: ":9108", Pprof: "off", WaitMaxTimeout: 10 * time.Minute, MaxWaiters: 1000},
		Log:             Log{Level: "info"},
		Retry:           Retry{Initial: 200 * time.Millisecond, Max: 30 * time.Second, AuthInterval: 30 * time.Second},
		SelfHeal:        SelfHeal{MaxPerHour: 6},
		ShutdownTimeout: 10 * time.Second,
	}
}

// CatalogDefaults is a catalog before its keys are read (so that a key given
// as 0 or empty is the operator's value, and validated, not a default).
func CatalogDefaults(name string) Catalog {
	return Catalog{
		Name:         name,
		HMSURIs:      []string{"thrift://127.0.0.1:9083"},
		HMSCatalog:   "hive",
		HMSTimeout:   30 * time.Second,
		BatchSize:    1000,
		PollInterval: time.Second,
		BusyPoll:     busyPollUnset,
		// Push-down reads the same changes as the whole log (agent/pushdown.go).
		FilterPushdown:    true,
		HMSAuth:           HMSAuth{Mechanism: "none"},
		TxnTimeout:        300 * time.Second, // Hive's default hive.txn.timeout
		TxnLookbackEvents: 100000,
	}
}

// busyPollUnset marks busy_poll_interval as not given: its default depends on
// poll_interval, which is read after the defaults are laid (BusyPollInterval).
const busyPollUnset = -1

// BusyPollInterval is the catalog's busy_poll_interval: as given, else 25 ms
// or poll_interval when that is shorter.
func (c Catalog) BusyPollInterval() time.Duration {
	if c.BusyPoll == busyPollUnset {
		return min(25*time.Millisecond, c.PollInterval)
	}
	return c.BusyPoll
}

// defaultMember is the member name when none is configured: the pod's name in
// Kubernetes, else the host's name.
func defaultMember() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// Sources are the inputs of one configuration, lowest precedence first: the
// defaults, the file, the environment, the flags.
type Sources struct {
	File   string
	Getenv func(string) string
	// Flags maps configuration keys to the text of the flags that were set.
	Flags map[string]string
	// HMSURIs, when set (--hms-uris), replaces the first catalog's hms_uris.
	HMSURIs []string
	// CheckKerberos reads and checks a catalog's Kerberos login (krb5.conf,
	// keytab, principals) during validation; nil checks only the keys. It is
	// the caller's because parsing a keytab is the metastore client's (hms).
	CheckKerberos func(Kerberos) error
}

// Load builds and validates the configuration and reads the secrets.
func Load(src Sources) (Config, Secrets, error) {
	cfg := Default()
	if src.Getenv == nil {
		src.Getenv = os.Getenv
	}
	if src.File != "" {
		if err := loadConfigFile(&cfg, src.File); err != nil {
			return cfg, Secrets{}, err
		}
	}
	if err := applyEnv(&cfg, src.Getenv); err != nil {
		return cfg, Secrets{}, err
	}
	for key, val := range src.Flags {
		if err := setKey(&cfg, key, val); err != nil {
			return cfg, Secrets{}, fmt.Errorf("flag for %s: %w", key, err)
		}
	}
	if cfg.Member == "" {
		cfg.Member = defaultMember()
	}
	if len(cfg.Catalogs) == 0 {
		cfg.Catalogs = []Catalog{CatalogDefaults("hive")} // catalogs from the file got theirs as they were read
	}
	if len(src.HMSURIs) > 0 {
		cfg.Catalogs[0].HMSURIs = src.HMSURIs
	}
	if err := cfg.validate(src.CheckKerberos); err != nil {
		return cfg, Secrets{}, fmt.Errorf("invalid configuration:\n%w", indent(err))
	}
	for i := range cfg.Catalogs {
		cfg.Catalogs[i].BusyPoll = cfg.Catalogs[i].BusyPollInterval() // the effective value, as --check-config prints it
	}
	sec, err := readSecrets(&cfg, src.Getenv)
	if err != nil {
		return cfg, Secrets{}, fmt.Errorf("invalid configuration:\n%w", indent(err))
	}
	sec.Warnings = append(sec.Warnings, cfg.plainTextWarnings(sec)...)
	return cfg, sec, nil
}

// indent puts each line of a joined error on its own indented line.
func indent(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return errors.New(strings.Join(lines, "\n"))
}
