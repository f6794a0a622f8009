package hms

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/hmssync/hmssync/hms/internal/sasl"
)

// ConfigError is a failure that retrying cannot fix: the Kerberos or SASL
// configuration of this client or of the metastore is wrong. Its text says what
// to change. The sidecar reports it (its /readyz fails) and retries slowly, so
// that a fix elsewhere (a new keytab, a metastore setting) is picked up.
type ConfigError struct{ msg string }

func (e *ConfigError) Error() string { return e.msg }

func configErrorf(format string, args ...any) error {
	return &ConfigError{msg: fmt.Sprintf(format, args...)}
}

// IsConfigError reports whether err is (or wraps) a ConfigError.
func IsConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

// kdcErrors are the Kerberos error codes (by gokrb5's names, which its errors
// carry only as text) that configuration causes, with what to fix.
func (k *kerberos) kdcHint(text, servicePrincipal string) (string, bool) {
	who := k.cfg.ClientPrincipal
	switch {
	// First: a KDC refusing a skewed pre-authentication timestamp says
	// "KRB_AP_ERR_SKEW ... PREAUTH_FAILED", which is not a keytab problem.
	// gokrb5 reports a skew it finds in the KDC's reply (no pre-authentication)
	// only as "clock skew with KDC too large".
	case strings.Contains(text, "KRB_AP_ERR_SKEW"), strings.Contains(text, "KDC_ERR_SKEW"), strings.Contains(text, "clock skew"):
		return "clock skew: the clocks of this host and of the KDC or the metastore differ by more than Kerberos allows " +
			"(krb5.conf clockskew, 5 minutes by default): synchronise them (NTP)", true
	case strings.Contains(text, "KDC_ERR_C_PRINCIPAL_UNKNOWN"):
		return fmt.Sprintf("the KDC does not know the client principal %s: check hms_auth.client_principal", who), true
	case strings.Contains(text, "KDC_ERR_S_PRINCIPAL_UNKNOWN"):
		return fmt.Sprintf("the KDC does not know the metastore's principal %s: hms_auth.service_principal (%s) must be the metastore's "+
			"hive.metastore.kerberos.principal with _HOST as the host in hms_uris", servicePrincipal, k.cfg.ServicePrincipal), true
	case strings.Contains(text, "KDC_ERR_PREAUTH_FAILED"), strings.Contains(text, "KRB_AP_ERR_BAD_INTEGRITY"),
		strings.Contains(text, "Decrypting_Error"), strings.Contains(text, "matching key not found in keytab"):
		return fmt.Sprintf("the keys in hms_auth.keytab %s are not the KDC's current keys of %s (a stale key version, after a "+
			"password change or a new ktadd?): export the principal's current keys again (ktadd -norandkey)", k.cfg.Keytab, who), true
	case strings.Contains(text, "KDC_ERR_CLIENT_REVOKED"):
		return fmt.Sprintf("the KDC has disabled or locked %s", who), true
	case strings.Contains(text, "KDC_ERR_ETYPE_NOSUPP"):
		return "the KDC and this client share no encryption type: give the principals AES keys", true
	}
	return "", false
}

// loginError explains a failed login (the AS exchange).
func (k *kerberos) loginError(err error) error {
	if hint, ok := k.kdcHint(err.Error(), ""); ok {
		return configErrorf("kerberos login as %s: %s (%v)", k.cfg.ClientPrincipal, hint, err)
	}
	return fmt.Errorf("kerberos login as %s: %w%s", k.cfg.ClientPrincipal, err, k.unreachableHint(err))
}

// unreachableHint names the KDCs when the KDC could not be reached, which
// is retried: the KDC may be down for a while.
func (k *kerberos) unreachableHint(err error) string {
	text := err.Error()
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, os.ErrDeadlineExceeded) || strings.Contains(text, "Networking_Error") ||
		strings.Contains(text, "connection refused") || strings.Contains(text, "i/o timeout") {
		return fmt.Sprintf("; the KDC is unreachable: check that it runs and that [realms] kdc in %s names it (retrying)", k.cfg.Krb5Conf)
	}
	return ""
}

// negotiationError explains a failed SASL negotiation with the metastore at uri.
func (k *kerberos) negotiationError(uri, servicePrincipal string, err error) error {
	var (
		te *sasl.TicketError
		ae *sasl.AcceptorError
		se *sasl.ServerError
		ns *sasl.NotSASLError
	)
	switch {
	case errors.As(err, &te):
		if hint, ok := k.kdcHint(err.Error(), servicePrincipal); ok {
			return configErrorf("%v: %s", err, hint)
		}
		return fmt.Errorf("%w%s", err, k.unreachableHint(err))
	case errors.As(err, &ae):
		if hint, ok := k.kdcHint(err.Error(), servicePrincipal); ok {
			return configErrorf("%v: %s", err, hint)
		}
		return configErrorf("%v: check that hms_auth.service_principal %s is the metastore's principal and that its keytab is current", err, servicePrincipal)
	case errors.As(err, &se):
		return configErrorf("%v: the metastore refused the Kerberos negotiation; check that hms_auth.service_principal %s is its "+
			"hive.metastore.kerberos.principal, that its keytab (hive.metastore.kerberos.keytab.file) holds that principal's current keys, "+
			"and that %s may connect", err, servicePrincipal, k.cfg.ClientPrincipal)
	case errors.Is(err, sasl.ErrPeerClosed), errors.As(err, &ns):
		return configErrorf("%v: the metastore at %s does not seem to speak SASL; set hive.metastore.sasl.enabled=true on it, "+
			"or hms_auth.mechanism: none here (and check hms_tls: a TLS metastore needs hms_tls.enabled)", err, uri)
	case IsConfigError(err):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Retried: a busy metastore is slow too.
		return fmt.Errorf("%w: the metastore at %s did not answer the SASL negotiation in time; if this persists, check that it has "+
			"hive.metastore.sasl.enabled=true (a metastore without SASL may wait for more bytes instead of answering)", err, uri)
	}
	return err
}

// saslReplyHint recognises, in the first bytes a plain Thrift client read,
// the ERROR or BAD frame with which a SASL metastore answers a call it cannot
// parse ("Invalid status -128"), and names the setting.
func saslReplyHint(head []byte) error {
	if len(head) < 5 || (head[0] != 3 && head[0] != 4) || head[1] != 0 || head[2] != 0 {
		return nil
	}
	n := int(head[3])<<8 | int(head[4])
	msg := head[5:]
	if n < len(msg) {
		msg = msg[:n]
	}
	return configErrorf("the metastore answered with a SASL negotiation frame (%q): it requires Kerberos "+
		"(hive.metastore.sasl.enabled=true); set hms_auth.mechanism: kerberos with its principal and a keytab (events tail: --auth kerberos)", msg)
}
