package preflight

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hmssync/hmssync/hms"
)

// The metastore's own event settings. Most "missed event" reports against
// notification-log consumers are metastores that do not log what the consumer
// needs: no DbNotificationListener, DML events off, a listener TTL shorter than
// an outage, messages without their objects. The metastore reveals its settings
// through get_config_value; each finding names the setting, the value needed
// and why. A setting the metastore refuses to reveal, or does not know, is
// reported as such (Unverified), never guessed.

// MinListenerTTL is the shortest hive.metastore.event.db.listener.timetolive
// taken as safe: events older than the TTL are deleted, and a sidecar cluster
// that is down longer (every member stopped by a bad deploy, etcd lost, a
// network partition noticed late) finds its cursor's events gone and starts
// over with a full refresh of the catalog. An hour is what an operator takes
// to notice and fix such an outage; Hive's default is 24 hours. Poll intervals
// and lease TTLs are seconds, far below it.
const MinListenerTTL = time.Hour

// dbNotificationListener is the simple name of Hive's listener that writes the
// notification log (org.apache.hive.hcatalog.listener.DbNotificationListener).
const dbNotificationListener = "DbNotificationListener"

// settingReader reads one setting; *hms.Client's ConfigValue.
type settingReader interface {
	ConfigValue(ctx context.Context, name string) (hms.ConfigValue, error)
	OldestEventID(ctx context.Context) (int64, bool, error)
}

// EventSettings reads the metastore's event settings through cl and returns one
// result per finding, for catalog c. `hmssync check` reports them with the
// other checks; `hmssync run` logs them at start as warnings.
func EventSettings(ctx context.Context, cl *hms.Client, c Catalog) []Result {
	return eventSettings(ctx, cl, c)
}

func eventSettings(ctx context.Context, cl settingReader, c Catalog) []Result {
	// One read first: a metastore that cannot be asked at all (down, or
	// refusing the call outright) is one finding, not one per setting.
	if _, err := cl.ConfigValue(ctx, "hive.metastore.dml.events"); err != nil {
		return []Result{fail(fmt.Sprintf("catalog %s: settings", c.Name), "get_config_value: "+err.Error(),
			"check that the metastore answers (hms_uris, hms_timeout) and its logs; its event settings are then read again")}
	}
	name := func(setting string) string { return fmt.Sprintf("catalog %s: setting %s", c.Name, setting) }
	read := func(setting string) (hms.ConfigValue, *Result) {
		cv, err := cl.ConfigValue(ctx, setting)
		if err != nil {
			r := fail(name(setting), "get_config_value: "+err.Error(), "check that the metastore answers (the checks above) and its logs")
			return cv, &r
		}
		if cv.Refused != "" {
			r := unverified(name(setting), "the metastore refuses to reveal it ("+cv.Refused+"); check its hive-site.xml by hand")
			return cv, &r
		}
		return cv, nil
	}
	rs := []Result{listenerFinding(name("hive.metastore.(transactional.)event.listeners"), read)}
	rs = append(rs, boolFinding(name("hive.metastore.dml.events"), "hive.metastore.dml.events", true, read,
		"without it, writes into existing tables and partitions (INSERT, INSERT OVERWRITE, LOAD DATA) log no INSERT event and no FE refreshes after them"))
	rs = append(rs, ttlFinding(name("hive.metastore.event.db.listener.timetolive"), read))
	rs = append(rs, notFalseFinding(name("hive.metastore.notifications.add.thrift.objects"), read))
	rs = append(rs, alterBasicFinding(name("hive.metastore.alter.notifications.basic"), read))
	rs = append(rs, apiAuthFinding(ctx, name("hive.metastore.event.db.notification.api.auth"), cl, c, read))
	rs = append(rs, txnTimeoutFinding(name("hive.txn.timeout"), read))
	return rs
}

type readFunc func(setting string) (hms.ConfigValue, *Result)

func listenerFinding(check string, read readFunc) Result {
	txn, r := read("hive.metastore.transactional.event.listeners")
	if r != nil {
		r.Check = check
		return *r
	}
	plain, r := read("hive.metastore.event.listeners")
	if r != nil {
		r.Check = check
		return *r
	}
	seen := fmt.Sprintf("transactional: %s; event: %s", listValue(txn), listValue(plain))
	switch {
	case hasListener(txn.Value, dbNotificationListener):
		return pass(check, "DbNotificationListener is transactional ("+seen+")")
	case hasListener(plain.Value, dbNotificationListener):
		return pass(check, "DbNotificationListener logs after the metastore's own commit ("+seen+
			"); in hive.metastore.transactional.event.listeners it logs in the same database transaction, so a metastore crash between the two cannot lose an event")
	case strings.TrimSpace(txn.Value+plain.Value) != "":
		return unverified(check, "no DbNotificationListener ("+seen+"); hmssync cannot tell whether the listeners named write the notification log")
	}
	return fail(check, "no listener writes the notification log ("+seen+")",
		"set hive.metastore.transactional.event.listeners=org.apache.hive.hcatalog.listener.DbNotificationListener in the metastore's hive-site.xml and restart it: without it the metastore logs no events and no change reaches an FE")
}

func listValue(cv hms.ConfigValue) string {
	switch {
	case !cv.Known:
		return "not set"
	case strings.TrimSpace(cv.Value) == "":
		return "empty"
	}
	return strings.TrimSpace(cv.Value)
}

// hasListener reports whether the comma-separated class list names a class
// whose simple name is simple.
func hasListener(list, simple string) bool {
	for _, cls := range strings.Split(list, ",") {
		cls = strings.TrimSpace(cls)
		if cls == simple || strings.HasSuffix(cls, "."+simple) {
			return true
		}
	}
	return false
}

// hiveBool parses a boolean setting as Hive does (Configuration.getBoolean:
// "true" or "false" in any case, surrounding spaces ignored).
func hiveBool(s string) (v, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func boolFinding(check, setting string, want bool, read readFunc, why string) Result {
	cv, r := read(setting)
	if r != nil {
		return *r
	}
	fix := fmt.Sprintf("set %s=%t in the metastore's hive-site.xml and restart it: %s", setting, want, why)
	if !cv.Known {
		return fail(check, "not known to this metastore", fix)
	}
	v, ok := hiveBool(cv.Value)
	if !ok || v != want {
		return fail(check, fmt.Sprintf("%q", cv.Value), fix)
	}
	return pass(check, cv.Value)
}

func ttlFinding(check string, read readFunc) Result {
	cv, r := read("hive.metastore.event.db.listener.timetolive")
	if r != nil {
		return *r
	}
	fix := fmt.Sprintf("set hive.metastore.event.db.listener.timetolive to at least %s (e.g. 86400s, Hive's default) and restart the metastore: "+
		"events older than it are deleted, and sidecars that were all down longer than it (a bad deploy, etcd lost) start over with a full refresh of the catalog", fmtDuration(MinListenerTTL))
	if !cv.Known {
		return unverified(check, "not known to this metastore; Hive's default is 86400s")
	}
	d, err := hms.ParseHiveDuration(cv.Value, time.Second)
	if err != nil {
		return fail(check, err.Error(), fix)
	}
	if d < MinListenerTTL {
		return fail(check, fmt.Sprintf("%s (%q), shorter than an outage hmssync rides out without a full refresh (%s)", fmtDuration(d), cv.Value, fmtDuration(MinListenerTTL)), fix)
	}
	return pass(check, fmt.Sprintf("%s: sidecars may all be down that long before a full refresh is needed", fmtDuration(d)))
}

func notFalseFinding(check string, read readFunc) Result {
	cv, r := read("hive.metastore.notifications.add.thrift.objects")
	if r != nil {
		return *r
	}
	if !cv.Known {
		return pass(check, "not a setting of this metastore: it always writes the objects into its messages")
	}
	if v, ok := hiveBool(cv.Value); ok && !v {
		return fail(check, fmt.Sprintf("%q: messages carry no table and partition objects", cv.Value),
			"set hive.metastore.notifications.add.thrift.objects=true (the default) and restart the metastore: hmssync names added and altered partitions, and tells renames and view changes, from the objects in the messages")
	}
	return pass(check, cv.Value)
}

func alterBasicFinding(check string, read readFunc) Result {
	cv, r := read("hive.metastore.alter.notifications.basic")
	if r != nil {
		return *r
	}
	if !cv.Known {
		return pass(check, "not a setting of this metastore: it logs every alter")
	}
	if v, ok := hiveBool(cv.Value); !ok || v {
		return fail(check, fmt.Sprintf("%q: only alters that change a name, location or owner are logged", cv.Value),
			"set hive.metastore.alter.notifications.basic=false and restart the metastore: otherwise schema and partition changes log no ALTER event and no FE refreshes after them")
	}
	return pass(check, cv.Value)
}

func apiAuthFinding(ctx context.Context, check string, cl settingReader, c Catalog, read readFunc) Result {
	cv, r := read("hive.metastore.event.db.notification.api.auth")
	user := sidecarUser(c)
	if r != nil {
		return *r
	}
	if !cv.Known {
		return unverified(check, "not known to this metastore")
	}
	if v, ok := hiveBool(cv.Value); ok && !v {
		return pass(check, cv.Value+": notification calls are open to every user")
	}
	// On: the metastore lets only proxy users read the log. Whether this
	// sidecar's user is one shows in whether its read is answered.
	if _, _, err := cl.OldestEventID(ctx); err != nil {
		return fail(check, fmt.Sprintf("%q, and the metastore refused to list events to %s: %v", cv.Value, user, err),
			"set hive.metastore.event.db.notification.api.auth=false on the metastore, or make "+user+
				" a proxy user there (hadoop.proxyuser.<user>.hosts naming the sidecars' hosts, in the metastore's core-site.xml), and restart it")
	}
	return pass(check, fmt.Sprintf("%q: only proxy users may read the log, and %s may", cv.Value, user))
}

// sidecarUser is the user the metastore sees the sidecar as, as far as its
// configuration tells.
func sidecarUser(c Catalog) string {
	switch {
	case c.Kerberos != nil:
		p := c.Kerberos.ClientPrincipal
		if i := strings.IndexAny(p, "/@"); i > 0 {
			p = p[:i]
		}
		return "the sidecar's user " + p + " (hms_auth " + c.Kerberos.ClientPrincipal + ")"
	case c.UGIUser != "":
		return "the sidecar's user " + c.UGIUser + " (hms_user)"
	}
	return "the sidecar (no hms_user or hms_auth: the metastore sees the user it runs calls as)"
}

func txnTimeoutFinding(check string, read readFunc) Result {
	cv, r := read("hive.txn.timeout")
	if r != nil {
		r.Detail += fmt.Sprintf("; hmssync takes Hive's default %s for open transactions", fmtDuration(hms.DefaultTxnTimeout))
		return *r
	}
	if !cv.Known {
		return unverified(check, fmt.Sprintf("not known to this metastore; hmssync takes Hive's default %s for open transactions", fmtDuration(hms.DefaultTxnTimeout)))
	}
	d, err := hms.ParseHiveDuration(cv.Value, time.Second)
	if err != nil {
		return fail(check, err.Error(), "set hive.txn.timeout to a time such as 300s")
	}
	return pass(check, fmt.Sprintf("%s: a transaction open longer without a heartbeat is aborted by the metastore", fmtDuration(d)))
}

// fmtDuration prints d in seconds, with hours or days for long ones.
func fmtDuration(d time.Duration) string {
	s := fmt.Sprintf("%d s", int64(d/time.Second))
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		s += fmt.Sprintf(" (%d days)", d/(24*time.Hour))
	case d >= 2*time.Hour && d%time.Hour == 0:
		s += fmt.Sprintf(" (%d h)", d/time.Hour)
	}
	return s
}

func unverified(check, detail string) Result {
	return Result{Check: check, OK: true, Unverified: true, Detail: detail}
}
