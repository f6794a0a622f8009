// Package kdctest runs a throwaway MIT Kerberos KDC on loopback for tests:
// Debian's krb5kdc with a fresh realm in a temporary directory, its principals
// and keytabs made with kadmin.local. A real KDC is the best test double for the
// Kerberos exchanges: it is what sidecars meet in production.
//
// Tests skip, with a message saying what to install, where the binaries are
// absent, so that `go test ./...` stays green on a machine without them; CI
// installs krb5-kdc and krb5-admin-server and runs them.
package kdctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Realm is the realm every KDC started here serves.
const Realm = "HMSSYNC.TEST"

// sbin are the places Debian puts the KDC's binaries, which may not be on PATH.
var sbin = []string{"/usr/sbin", "/usr/local/sbin", "/sbin"}

// KDC is a running krb5kdc. Stop and Start pause and resume it on the same port.
type KDC struct {
	Realm string
	// Addr is the KDC's loopback host:port (TCP and UDP).
	Addr string
	// Krb5Conf is a client krb5.conf for the realm: TCP only, no DNS, with
	// localhost and 127.0.0.1 in the realm.
	Krb5Conf string
	dir      string
	env      []string
	bins     map[string]string

	mu     sync.Mutex
	proc   *os.Process // nil while stopped
	exited chan error  // receives krb5kdc's exit
	// offset is how far the KDC's clock is from the host's (ClockOffset).
	offset time.Duration
}

// Options shape the realm.
type Options struct {
	// MaxLife bounds every ticket (kdc.conf max_life); default 10h.
	MaxLife time.Duration
	// MaxRenewableLife bounds renewal (max_renewable_life); default 7 days.
	MaxRenewableLife time.Duration
	// ClockOffset runs the KDC with its clock this far from the host's (under
	// libfaketime), as a KDC or client host whose NTP has failed has it: beyond
	// the allowed skew (5 minutes) Kerberos refuses. Start skips the test when
	// Debian's faketime package is not installed.
	ClockOffset time.Duration
}

// libfaketime are the places Debian's faketime package puts the library that
// shifts a process's clock; it is preloaded into krb5kdc directly, rather than
// through the faketime command, so that the process Stop kills is krb5kdc.
var libfaketime = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
}

// Start makes a realm and starts its KDC; t.Cleanup stops it. It skips t when
// the MIT KDC is not installed.
func Start(t testing.TB, opts Options) *KDC {
	t.Helper()
	bins := map[string]string{}
	for _, name := range []string{"krb5kdc", "kdb5_util", "kadmin.local"} {
		p, err := lookPath(name)
		if err != nil {
			t.Skipf("kdctest: %s not found (install Debian's krb5-kdc and krb5-admin-server to run the Kerberos tests)", name)
		}
		bins[name] = p
	}
	if opts.MaxLife == 0 {
		opts.MaxLife = 10 * time.Hour
	}
	if opts.MaxRenewableLife == 0 {
		opts.MaxRenewableLife = 7 * 24 * time.Hour
	}
	if opts.ClockOffset != 0 {
		if faketimeLib() == "" {
			t.Skipf("kdctest: libfaketime not found in %v (install Debian's faketime to run the clock-skew tests)", libfaketime)
		}
	}
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatalf("kdctest: %v", err)
	}
	k := &KDC{Realm: Realm, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, bins: bins, offset: opts.ClockOffset}
	k.Krb5Conf = filepath.Join(dir, "krb5.conf")
	kdcConf := filepath.Join(dir, "kdc.conf")
	write(t, kdcConf, fmt.Sprintf(`[kdcdefaults]
 kdc_listen = %[2]s
 kdc_tcp_listen = %[2]s
[realms]
 %[1]s = {
  database_name = %[3]s/principal
  key_stash_file = %[3]s/stash
  acl_file = %[3]s/kadm5.acl
  max_life = %[4]ds
  max_renewable_life = %[5]ds
  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
 }
[logging]
 kdc = FILE:%[3]s/kdc.log
`, Realm, k.Addr, dir, int(opts.MaxLife.Seconds()), int(opts.MaxRenewableLife.Seconds())))
	write(t, filepath.Join(dir, "kadm5.acl"), "")
	write(t, k.Krb5Conf, fmt.Sprintf(`[libdefaults]
 default_realm = %[1]s
 dns_lookup_kdc = false
 dns_lookup_realm = false
 rdns = false
 udp_preference_limit = 1
 ticket_lifetime = %[3]ds
 renew_lifetime = %[4]ds
 default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
 default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
 permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
[realms]
 %[1]s = {
  kdc = %[2]s
 }
[domain_realm]
 localhost = %[1]s
 127.0.0.1 = %[1]s
`, Realm, k.Addr, int(opts.MaxLife.Seconds()), int(opts.MaxRenewableLife.Seconds())))
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.Krb5Conf, "KRB5_KDC_PROFILE="+kdcConf)
	if out, err := k.run(bins["kdb5_util"], "-r", Realm, "create", "-s", "-P", "kdctest-master-password"); err != nil {
		t.Fatalf("kdctest: creating the realm: %v\n%s", err, out)
	}
	t.Cleanup(k.Stop)
	if err := k.Resume(); err != nil {
		t.Fatalf("kdctest: %v", err)
	}
	return k
}

// AddPrincipal creates principal (without @REALM) with a random key.
func (k *KDC) AddPrincipal(t testing.TB, principal string) {
	t.Helper()
	k.kadmin(t, "addprinc -randkey "+principal)
}

// Keytab writes principal's current keys to a new keytab file and returns
// its path; the keys (and their version) do not change.
func (k *KDC) Keytab(t testing.TB, principal string) string {
	t.Helper()
	path := filepath.Join(k.dir, strings.NewReplacer("/", "_", "@", "_").Replace(principal)+strconv.FormatInt(time.Now().UnixNano(), 36)+".keytab")
	k.kadmin(t, "ktadd -k "+path+" -norandkey "+principal)
	return path
}

// RotateKey gives principal new random keys (a new key version), as a
// password change or `ktadd` without -norandkey does: older keytabs go stale.
func (k *KDC) RotateKey(t testing.TB, principal string) {
	t.Helper()
	k.kadmin(t, "cpw -randkey "+principal)
}

// Principal returns principal@REALM.
func (k *KDC) Principal(name string) string { return name + "@" + k.Realm }

func (k *KDC) kadmin(t testing.TB, query string) {
	t.Helper()
	out, err := k.run(k.bins["kadmin.local"], "-r", k.Realm, "-q", query)
	if err != nil || bytes.Contains(out, []byte("rror")) {
		t.Fatalf("kdctest: kadmin.local %q: %v\n%s", query, err, out)
	}
}

func (k *KDC) run(bin string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = k.env
	cmd.Dir = k.dir
	return cmd.CombinedOutput()
}

// Stop stops the KDC (clients then find it unreachable); Resume starts it again.
func (k *KDC) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.proc == nil {
		return
	}
	_ = k.proc.Kill()
	<-k.exited
	k.proc = nil
}

// Resume starts the KDC if it is stopped and waits until it accepts TCP.
func (k *KDC) Resume() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.proc != nil {
		return nil
	}
	cmd := exec.Command(k.bins["krb5kdc"], "-n", "-r", k.Realm)
	cmd.Env = k.env
	if k.offset != 0 {
		// DONT_FAKE_MONOTONIC: only the wall clock (what tickets carry) is
		// shifted; the KDC's own timers keep working.
		cmd.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], "LD_PRELOAD="+faketimeLib(),
			fmt.Sprintf("FAKETIME=%+d", int64(k.offset.Seconds())), "DONT_FAKE_MONOTONIC=1") // FAKETIME in seconds
	}
	cmd.Dir = k.dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting krb5kdc: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", k.Addr, time.Second)
		if err == nil {
			c.Close()
			k.proc, k.exited = cmd.Process, exited
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("krb5kdc exited: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("krb5kdc did not listen on %s within 10s\n%s", k.Addr, stderr.String())
		}
	}
}

// SetClockOffset changes the KDC's clock offset (see Options.ClockOffset) from
// its next Resume on: Stop, SetClockOffset(0), Resume is NTP fixing the clock.
// Offsets other than 0 need a KDC started with one (so that faketime is known
// to be installed).
func (k *KDC) SetClockOffset(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.offset = d
}

// RequirePreauth makes the KDC demand pre-authentication (an encrypted
// timestamp, which it checks against its clock) before it issues principal's
// tickets, as production realms do.
func (k *KDC) RequirePreauth(t testing.TB, principal string) {
	t.Helper()
	k.kadmin(t, "modprinc +requires_preauth "+principal)
}

func faketimeLib() string {
	for _, p := range libfaketime {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range sbin {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// freePort finds a port free for both TCP and UDP on loopback.
func freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port free for both TCP and UDP on 127.0.0.1")
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("kdctest: %v", err)
	}
}

// DeletePrincipal removes principal from the realm.
func (k *KDC) DeletePrincipal(t testing.TB, principal string) {
	t.Helper()
	k.kadmin(t, "delprinc -force "+principal)
}

// Kinit obtains principal's tickets from keytab into a new FILE ticket cache,
// as kinit -kt does on a host, and returns its name (FILE:path). It skips t
// when MIT's kinit (Debian's krb5-user) is not installed.
func (k *KDC) Kinit(t testing.TB, principal, keytab string) string {
	t.Helper()
	bin, err := lookPath("kinit")
	if err != nil {
		t.Skip("kdctest: kinit not found (install Debian's krb5-user to run the ticket-cache tests)")
	}
	path := filepath.Join(k.dir, "krb5cc_"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if out, err := k.run(bin, "-c", "FILE:"+path, "-kt", keytab, k.Principal(principal)); err != nil {
		t.Fatalf("kdctest: kinit %s: %v\n%s", principal, err, out)
	}
	return "FILE:" + path
}

// KinitInto refreshes the ticket cache name (from Kinit) with principal's
// tickets, as a cron job running kinit again does.
func (k *KDC) KinitInto(t testing.TB, name, principal, keytab string) {
	t.Helper()
	bin, err := lookPath("kinit")
	if err != nil {
		t.Skip("kdctest: kinit not found")
	}
	if out, err := k.run(bin, "-c", name, "-kt", keytab, k.Principal(principal)); err != nil {
		t.Fatalf("kdctest: kinit %s: %v\n%s", principal, err, out)
	}
}
