package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestExampleConfigIsValidAndDocumentsEveryKey(t *testing.T) {
	cfg, _, err := Load(Sources{File: "../../examples/sidecar.yaml", Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m1"})})
	if err != nil {
		t.Fatalf("examples/sidecar.yaml: %v", err)
	}
	if cfg.Cluster != "doris-prod" || cfg.Catalogs[0].Name != "hive" {
		t.Errorf("example not read: cluster %q catalogs %+v", cfg.Cluster, cfg.Catalogs)
	}
	data, err := os.ReadFile("../../examples/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Every key appears in the example at its full path (fe.password_file
	// under fe, not just some password_file anywhere); catalog keys under
	// the catalogs list's item.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("examples/sidecar.yaml: %v", err)
	}
	paths := map[string]bool{}
	yamlKeyPaths(&doc, "", paths)
	keys := leafKeys()
	ct := reflect.TypeOf(Catalog{})
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		name := "catalogs[]." + strings.Split(f.Tag.Get("yaml"), ",")[0]
		keys = append(keys, name)
		if f.Type.Kind() == reflect.Struct { // hms_tls and its keys
			for j := 0; j < f.Type.NumField(); j++ {
				keys = append(keys, name+"."+strings.Split(f.Type.Field(j).Tag.Get("yaml"), ",")[0])
			}
		}
	}
	for _, k := range keys {
		if !paths[k] {
			t.Errorf("examples/sidecar.yaml does not document key %s (at that path)", k)
		}
	}
}

// yamlKeyPaths adds the dotted path of every mapping key under n to paths; the
// items of a sequence add "[]" to the path of the sequence.
func yamlKeyPaths(n *yaml.Node, prefix string, paths map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			yamlKeyPaths(c, prefix, paths)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if prefix != "" {
				p = prefix + "." + p
			}
			paths[p] = true
			yamlKeyPaths(n.Content[i+1], p, paths)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			yamlKeyPaths(c, prefix+"[]", paths)
		}
	}
}

func TestPrecedenceFlagEnvFileDefault(t *testing.T) {
	file := writeFile(t, `
cluster: from-file
member: file-member
etcd:
  lease_ttl: 12s
fe:
  url: http://file:8030
  timeout: 7s
catalogs:
  - name: c1
    hms_uris: [thrift://hms1:9083]
    poll_interval: 250ms
`)
	env := envOf(map[string]string{
		"HMSSYNC_MEMBER":                "env-member",
		"HMSSYNC_FE_URL":                "http://env:8030",
		"HMSSYNC_ETCD_ENDPOINTS":        "http://e1:2379, http://e2:2379",
		"HMSSYNC_FE_PASSWORD":           "s3cret",
		"HMSSYNC_ETCD_LEASE_TTL":        "",
		"HMSSYNC_HTTP_LISTEN":           "127.0.0.1:9999",
		"HMSSYNC_RETRY_MAX":             "5s",
		"HMSSYNC_FE_HEALTH_INTERVAL":    "2s",
		"HMSSYNC_HTTP_WAIT_MAX_TIMEOUT": "2m",
	})
	cfg, sec, err := Load(Sources{File: file, Getenv: env, Flags: map[string]string{"fe.url": "http://flag:8030"}})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"cluster (file over default)", cfg.Cluster, "from-file"},
		{"member (env over file)", cfg.Member, "env-member"},
		{"fe.url (flag over env over file)", cfg.FE.URL, "http://flag:8030"},
		{"etcd.endpoints (env list)", cfg.Etcd.Endpoints, []string{"http://e1:2379", "http://e2:2379"}},
		{"etcd.lease_ttl (file; empty env ignored)", cfg.Etcd.LeaseTTL, 12 * time.Second},
		{"etcd.request_timeout (default)", cfg.Etcd.RequestTimeout, 3 * time.Second},
		{"fe.timeout (file)", cfg.FE.Timeout, 7 * time.Second},
		{"http.listen (env)", cfg.HTTP.Listen, "127.0.0.1:9999"},
		{"http.pprof (default: off)", cfg.HTTP.Pprof, "off"},
		{"http.wait_max_timeout (env)", cfg.HTTP.WaitMaxTimeout, 2 * time.Minute},
		{"http.max_waiters (default)", cfg.HTTP.MaxWaiters, 1000},
		{"catalog busy_poll_interval (default)", cfg.Catalogs[0].BusyPoll, 25 * time.Millisecond},
		{"retry.max (env)", cfg.Retry.Max, 5 * time.Second},
		{"catalog poll_interval (file)", cfg.Catalogs[0].PollInterval, 250 * time.Millisecond},
		{"catalog txn_timeout (default)", cfg.Catalogs[0].TxnTimeout, 300 * time.Second},
		{"catalog batch_size (default)", cfg.Catalogs[0].BatchSize, 1000},
		{"catalog txn_lookback_events (default)", cfg.Catalogs[0].TxnLookbackEvents, 100000},
		{"catalog hms_catalog (default)", cfg.Catalogs[0].HMSCatalog, "hive"},
		{"fe password (env)", sec.FEPassword, "s3cret"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestMemberDefaultsToPodName(t *testing.T) {
	t.Setenv("POD_NAME", "doris-fe-2")
	cfg, _, err := Load(Sources{Getenv: envOf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Member != "doris-fe-2" {
		t.Errorf("member = %q, want the pod name doris-fe-2", cfg.Member)
	}
}

func TestPasswordFileWinsAndIsTrimmed(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, sec, err := Load(Sources{
		Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m", "HMSSYNC_FE_PASSWORD_FILE": pw, "HMSSYNC_FE_PASSWORD": "from-env"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if sec.FEPassword != "from-file" {
		t.Errorf("FE password = %q, want the file's content without its newline", sec.FEPassword)
	}
}

// Each bad value stops start-up with a message naming the key, the value and what
// is allowed.
func TestInvalidValuesAreNamed(t *testing.T) {
	cases := []struct {
		name, file string
		env        map[string]string
		want       []string // substrings of the error
	}{
		{"lease not whole seconds", "etcd: {lease_ttl: 2500ms}", nil, []string{"etcd.lease_ttl", "2.5s", "whole number of seconds"}},
		{"request timeout vs lease", "etcd: {lease_ttl: 6s, request_timeout: 2s}", nil, []string{"etcd.request_timeout", "2s", "etcd.lease_ttl / 3 (= 2s)"}},
		{"dialect", "fe: {dialect: mysql}", nil, []string{"fe.dialect", `"mysql"`, "doris, native or log"}},
		{"scope", "fe: {scope: everyone}", nil, []string{"fe.scope", `"everyone"`, "auto"}},
		{"unknown key", "fe: {passwd: x}", nil, []string{"fe.passwd", "unknown key", "password_file"}},
		{"batch size text", "catalogs: [{name: a}, {name: b, batch_size: lots}]", nil, []string{"catalogs[1].batch_size", `"lots"`, "whole number"}},
		// An explicit 0 is the operator's value, not "use the default".
		{"batch size zero", "catalogs: [{name: a, batch_size: 0}]", nil, []string{"catalogs[0].batch_size", "= 0", "1 to 100000"}},
		{"poll interval zero", "catalogs: [{name: a, poll_interval: 0s}]", nil, []string{"catalogs[0].poll_interval", "0s", "10ms to 1h"}},
		{"txn timeout zero", "catalogs: [{name: a, txn_timeout: 0s}]", nil, []string{"catalogs[0].txn_timeout", "0s", "1s to 168h"}},
		{"hms timeout zero", "catalogs: [{name: a, hms_timeout: 0}]", nil, []string{"catalogs[0].hms_timeout", "0s", "1ms to 10m"}},
		{"hms uris empty", "catalogs: [{name: a, hms_uris: []}]", nil, []string{"catalogs[0].hms_uris", "at least one"}},
		{"catalog defaults kept", "catalogs: [{name: a}, {name: b, batch_size: 5}]", nil, []string{}}, // valid
		{"duplicate key", "fe:\n  timeout: 5s\n  timeout: 10s\n", nil, []string{"fe.timeout", "line 3", "duplicate key", "line 2"}},
		{"duplicate top-level key", "cluster: a\ncluster: b\n", nil, []string{"cluster (line 2)", "duplicate key"}},
		{"duplicate catalog key", "catalogs:\n- name: a\n  batch_size: 5\n  batch_size: 6\n", nil, []string{"catalogs[0].batch_size", "duplicate key"}},
		{"prefix with a space", "etcd: {prefix: '/hms sync'}", nil, []string{"etcd.prefix", `"/hms sync"`, "segments of letters"}},
		{"prefix with a newline", "etcd: {prefix: \"/hms\\nsync\"}", nil, []string{"etcd.prefix", `"/hms\nsync"`}},
		{"catalogs differing in case", "catalogs: [{name: Hive}, {name: hive}]", nil, []string{"catalogs[1].name", `"hive"`, `catalogs[0] is "Hive"`}},
		{"batch size negative", "catalogs: [{name: a, batch_size: -5}]", nil, []string{"catalogs[0].batch_size", "-5", "1 to 100000"}},
		{"duplicate catalog", "catalogs: [{name: a}, {name: a}]", nil, []string{"catalogs[1].name", `"a"`, `catalogs[0] is "a"`}},
		{"hms uri", "catalogs: [{name: a, hms_uris: ['http://hms:9083']}]", nil, []string{"catalogs[0].hms_uris[0]", "http://hms:9083", "thrift://host:port"}},
		{"regex", "catalogs: [{name: a, include: ['sales\\.(']}]", nil, []string{"catalogs[0].include[0]", "regular expression"}},
		{"poll interval", "catalogs: [{name: a, poll_interval: 1ms}]", nil, []string{"catalogs[0].poll_interval", "1ms", "10ms to 1h"}},
		{"busy poll above poll interval", "catalogs: [{name: a, poll_interval: 100ms, busy_poll_interval: 200ms}]", nil, []string{"catalogs[0].busy_poll_interval", "200ms", "up to poll_interval (100ms)"}},
		{"txn look-back negative", "catalogs: [{name: a, txn_lookback_events: -1}]", nil, []string{"catalogs[0].txn_lookback_events", "-1", "0 (no look-back) to 10000000"}},
		{"txn look-back off", "catalogs: [{name: a, txn_lookback_events: 0}]", nil, []string{}},
		{"busy poll default under a short poll interval", "catalogs: [{name: a, poll_interval: 10ms}]", nil, []string{}},
		{"env duration", "", map[string]string{"HMSSYNC_FE_TIMEOUT": "soon"}, []string{"HMSSYNC_FE_TIMEOUT", "fe.timeout", `"soon"`, "duration"}},
		{"listen", "http: {listen: 9108}", nil, []string{"http.listen", `"9108"`, "host:port"}},
		{"log level", "log: {level: loud}", nil, []string{"log.level", `"loud"`, "debug, info, warn or error"}},
		{"pprof", "http: {pprof: on}", nil, []string{"http.pprof", `"on"`, "off, loopback", "or any"}},
		{"wait max timeout zero", "http: {wait_max_timeout: 0s}", nil, []string{"http.wait_max_timeout", "0s", "1s to 24h"}},
		{"wait max timeout huge", "http: {wait_max_timeout: 1000h}", nil, []string{"http.wait_max_timeout", "1000h", "1s to 24h"}},
		{"max waiters negative", "http: {max_waiters: -1}", nil, []string{"http.max_waiters", "-1", "1 to 100000"}},
		{"max waiters env not a number", "", map[string]string{"HMSSYNC_HTTP_MAX_WAITERS": "many"}, []string{"HMSSYNC_HTTP_MAX_WAITERS", "http.max_waiters", `"many"`}},
		{"etcd user without password", "etcd: {username: hms}", nil, []string{"etcd.username", "HMSSYNC_ETCD_PASSWORD"}},
		{"missing password file", "fe: {password_file: /nonexistent/pw}", nil, []string{"fe.password_file", "/nonexistent/pw", "readable file"}},
		{"tls with http endpoint", "etcd: {tls: {ca_file: ../../go.mod}}", nil, []string{"etcd.endpoints[0]", "https://"}},
		{"hms tls missing CA file", "catalogs: [{name: a, hms_tls: {enabled: true, ca_file: /nonexistent/ca.pem}}]", nil,
			[]string{"catalogs[0].hms_tls.ca_file", "/nonexistent/ca.pem", "readable PEM file", "no such file"}},
		{"hms tls CA file without certificates", "catalogs: [{name: a, hms_tls: {enabled: true, ca_file: ../../go.mod}}]", nil,
			[]string{"catalogs[0].hms_tls.ca_file", "../../go.mod", "no PEM certificate"}},
		{"hms tls keys without enabled", "catalogs: [{name: a}, {name: b, hms_tls: {server_name: hms}}]", nil,
			[]string{"catalogs[1].hms_tls.enabled", "want true"}},
		{"hms tls cert without key", "catalogs: [{name: a, hms_tls: {enabled: true, cert_file: ../../go.mod}}]", nil,
			[]string{"catalogs[0].hms_tls.cert_file", "catalogs[0].hms_tls.key_file", "both"}},
		{"hms tls cert not a key pair", "catalogs: [{name: a, hms_tls: {enabled: true, cert_file: ../../go.mod, key_file: ../../go.mod}}]", nil,
			[]string{"catalogs[0].hms_tls.cert_file", "catalogs[0].hms_tls.key_file", "PEM client certificate"}},
		{"hms tls skip verify with a CA", "catalogs: [{name: a, hms_tls: {enabled: true, ca_file: ../../go.mod, insecure_skip_verify: true}}]", nil,
			[]string{"catalogs[0].hms_tls.insecure_skip_verify", "ca_file"}},
		{"hms tls unknown key", "catalogs: [{name: a, hms_tls: {ca: x}}]", nil,
			[]string{"catalogs[0].hms_tls.ca", "unknown key", "ca_file"}},
		{"hms tls with system CAs", "catalogs: [{name: a, hms_tls: {enabled: true}}]", nil, []string{}}, // valid
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"HMSSYNC_MEMBER": "m"}
			for k, v := range c.env {
				env[k] = v
			}
			_, _, err := Load(Sources{File: writeFile(t, c.file), Getenv: envOf(env)})
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error mentioning %q, got none", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A password put in the FE URL is refused, and the refusal does not repeat it.
func TestSecretInURLIsRefusedWithoutEcho(t *testing.T) {
	_, _, err := Load(Sources{Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m", "HMSSYNC_FE_URL": "http://root:hunter2@fe:8030"})})
	if err == nil || !strings.Contains(err.Error(), "fe.url") {
		t.Fatalf("want an fe.url error, got %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the password: %v", err)
	}
}

// Userinfo in any URL is refused, and no error repeats the password.
func TestUserInfoInURLsIsRefusedAndRedacted(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		file string
		key  string
		hint string
	}{
		{"etcd endpoint", map[string]string{"HMSSYNC_ETCD_ENDPOINTS": "http://root:hunter2@etcd:2379"}, "", "etcd.endpoints[0]", "etcd.password_file"},
		{"fe url that does not parse", map[string]string{"HMSSYNC_FE_URL": "http://root:hunter2@fe:8030/%zz"}, "", "fe.url", "fe.password_file"},
		{"hms uri", nil, "catalogs: [{name: a, hms_uris: ['thrift://hive:hunter2@hms:9083']}]", "catalogs[0].hms_uris[0]", "password_file"},
	} {
		env := map[string]string{"HMSSYNC_MEMBER": "m"}
		for k, v := range c.env {
			env[k] = v
		}
		_, _, err := Load(Sources{File: writeFile(t, c.file), Getenv: envOf(env)})
		if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.hint) {
			t.Errorf("%s: %v; want %s refused, pointing at %s", c.name, err, c.key, c.hint)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", c.name, err)
		}
	}

}

// Password files: the file wins over the environment, the read is bounded, and
// a file others may read is warned about (the operator commands read them the
// same way: TestOperatorCommandsReadPasswordFilesAsRunDoes in cmd/hmssync).
func TestPasswordFiles(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	_, sec, err := Load(Sources{Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m", "HMSSYNC_ETCD_USERNAME": "u",
		"HMSSYNC_ETCD_PASSWORD_FILE": open, "HMSSYNC_ETCD_PASSWORD": "from-env"})})
	if err != nil || sec.EtcdPassword != "from-file" {
		t.Fatalf("run: etcd password %q, %v; want the file's", sec.EtcdPassword, err)
	}
	if w := strings.Join(sec.Warnings, "\n"); !strings.Contains(w, "etcd.password_file") || !strings.Contains(w, "0644") || !strings.Contains(w, "chmod 600") {
		t.Errorf("run: warnings %q; want one naming the file others may read", sec.Warnings)
	}
	_, _, err = Load(Sources{Getenv: envOf(map[string]string{"HMSSYNC_MEMBER": "m", "HMSSYNC_FE_PASSWORD_FILE": big})})
	if err == nil || !strings.Contains(err.Error(), "fe.password_file") || !strings.Contains(err.Error(), "larger than 65536 bytes") {
		t.Errorf("run with a 1 MiB password file: %v; want it refused by its size", err)
	}

}

// Secrets over plain http:// to another host are warned about; the embedded
// etcd (no TLS, no auth) listens only on loopback unless the unsafe key says so.
func TestPlainTextAndEmbeddedEtcdExposure(t *testing.T) {
	load := func(file string, env map[string]string) ([]string, error) {
		e := map[string]string{"HMSSYNC_MEMBER": "m"}
		for k, v := range env {
			e[k] = v
		}
		_, sec, err := Load(Sources{File: writeFile(t, file), Getenv: envOf(e)})
		return sec.Warnings, err
	}
	warns, err := load("fe: {url: 'http://fe.example:8030'}", map[string]string{"HMSSYNC_FE_PASSWORD": "x"})
	if err != nil || !strings.Contains(strings.Join(warns, "\n"), "fe.url http://fe.example:8030 is plain http://") {
		t.Errorf("FE basic auth over http:// to another host: warnings %q, %v; want a warning", warns, err)
	}
	warns, err = load("fe: {url: 'http://127.0.0.1:8030'}", map[string]string{"HMSSYNC_FE_PASSWORD": "x"})
	if err != nil || len(warns) != 0 {
		t.Errorf("FE on loopback: warnings %q, %v; want none", warns, err)
	}
	warns, err = load("etcd: {endpoints: ['http://etcd.example:2379'], username: u}", map[string]string{"HMSSYNC_ETCD_PASSWORD": "x"})
	if err != nil || !strings.Contains(strings.Join(warns, "\n"), "etcd password travels unencrypted") {
		t.Errorf("etcd password over http:// to another host: warnings %q, %v; want a warning", warns, err)
	}
	for _, listen := range []string{"0.0.0.0:2379", ":2379", "10.0.0.5:2379"} {
		_, err := load("etcd: {embedded_dir: /tmp/x, embedded_listen: '"+listen+"'}", nil)
		if err == nil || !strings.Contains(err.Error(), "etcd.embedded_listen") || !strings.Contains(err.Error(), "embedded_listen_unsafe_allow_remote") {
			t.Errorf("embedded_listen %s: %v; want it refused, naming the unsafe key", listen, err)
		}
	}
	warns, err = load("etcd: {embedded_dir: /tmp/x, embedded_listen: '0.0.0.0:2379', embedded_listen_unsafe_allow_remote: true}", nil)
	if err != nil || !strings.Contains(strings.Join(warns, "\n"), "without TLS or authentication") {
		t.Errorf("embedded_listen 0.0.0.0 with the unsafe key: warnings %q, %v; want accepted with a warning", warns, err)
	}
}
