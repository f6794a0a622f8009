package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/hms/message"
)

// checkMetastore checks one catalog's metastore: that it answers, that its
// notification log keeps events, and what the newest window of the log holds.
func checkMetastore(ctx context.Context, c Catalog) []Result {
	prefix := fmt.Sprintf("catalog %s: metastore %s", c.Name, strings.Join(c.URIs, ","))
	if c.Kerberos != nil {
		prefix += " (Kerberos as " + c.Kerberos.ClientPrincipal + ")"
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cl, err := hms.NewClient(hms.ClientConfig{URIs: c.URIs, DialTimeout: min(timeout, 10*time.Second), CallTimeout: timeout,
		Framed: c.Framed, TLS: c.TLS, Kerberos: c.Kerberos, UGIUser: c.UGIUser})
	if err != nil {
		fix := "check hms_uris (thrift://host:port)"
		if hms.IsConfigError(err) {
			fix = "fix what the error names in the catalog's hms_auth (mechanism, principals, keytab, krb5_conf)"
		}
		return []Result{fail(prefix, err.Error(), fix)}
	}
	defer cl.Close()

	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cur, err := cl.CurrentEventID(cctx)
	if err != nil {
		return []Result{fail(prefix+" answers", err.Error(), metastoreReachFix(c, err))}
	}
	rs := []Result{pass(prefix+" answers", fmt.Sprintf("current notification event id %d", cur))}
	rs = append(rs, eventSettings(cctx, cl, c)...)

	logName := fmt.Sprintf("catalog %s: notification log", c.Name)
	oldest, kept, err := cl.OldestEventID(cctx)
	switch {
	case err != nil:
		return append(rs, fail(logName+" readable", "get_next_notification: "+err.Error(),
			"the metastore answered but could not list its events: check its logs and that hms_user may read notifications"))
	case !kept && cur == 0:
		return append(rs, fail(logName+" readable", "the log is empty and has never held an event",
			"the metastore records no events: set hive.metastore.transactional.event.listeners="+
				"org.apache.hive.hcatalog.listener.DbNotificationListener in its hive-site.xml and restart it"))
	case !kept:
		return append(rs, pass(logName+" readable", fmt.Sprintf("empty: all %d events have expired (hive.metastore.event.db.listener.timetolive); a sidecar starts with a full refresh", cur)))
	}
	rs = append(rs, pass(logName+" readable", fmt.Sprintf("events %d to %d kept (%d)", oldest, cur, cur-oldest+1)))
	return append(rs, describeWindow(cctx, cl, c, oldest, cur, logName))
}

// describeWindow reads the newest Window events and reports their types, their
// age and whether they decode: what a sidecar would meet first.
func describeWindow(ctx context.Context, cl *hms.Client, c Catalog, oldest, cur int64, logName string) Result {
	n := min(max(c.Window, 1), MaxWindow)
	from := max(cur-int64(n), oldest-1)
	f, err := cl.NextEvents(ctx, from, n, nil)
	name := fmt.Sprintf("%s: the newest %d events", logName, cur-from)
	if err != nil {
		return fail(name, "get_next_notification: "+err.Error(), "check the metastore's logs")
	}
	if len(f.Events) == 0 {
		return pass(name, "none returned (expired while reading)")
	}
	types := map[string]int{}
	undecodable := 0
	dec := message.NewDecoder(c.HMSCatalog)
	var firstErr error
	for _, e := range f.Events {
		types[e.Type]++
		if _, err := dec.Decode(e); err != nil {
			undecodable++
			if firstErr == nil {
				firstErr = fmt.Errorf("event %d (%s): %w", e.ID, e.Type, err)
			}
		}
	}
	names := make([]string, 0, len(types))
	for t := range types {
		names = append(names, t)
	}
	sort.Slice(names, func(i, j int) bool {
		if types[names[i]] != types[names[j]] {
			return types[names[i]] > types[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, t := range names {
		parts[i] = fmt.Sprintf("%s %d", t, types[t])
	}
	last := f.Events[len(f.Events)-1]
	age := time.Since(time.Unix(int64(last.Time), 0)).Round(time.Second)
	detail := fmt.Sprintf("%s; newest %d at %s (%s ago)", strings.Join(parts, ", "), last.ID,
		time.Unix(int64(last.Time), 0).UTC().Format(time.RFC3339), age)
	if undecodable > 0 {
		return fail(name, fmt.Sprintf("%s; %d do not decode, first %v", detail, undecodable, firstErr),
			"a sidecar self-heals past them with a full refresh each time; check the metastore's message format (hive.metastore.event.message.factory) against the supported json and gzip(json) formats")
	}
	return pass(name, detail)
}

func metastoreReachFix(c Catalog, err error) string {
	msg := err.Error()
	switch {
	case hms.IsConfigError(err):
		// Kerberos or SASL set up wrongly, here or on the metastore: the
		// error itself names what (principal, keytab, KDC, sasl.enabled).
		return "fix what the error names: the catalog's hms_auth (principals, keytab, krb5_conf), the KDC's principals, or the metastore's hive.metastore.sasl.enabled"
	case c.Kerberos != nil && (strings.Contains(msg, "KDC") || strings.Contains(msg, "kerberos") || strings.Contains(msg, "Kerberos")):
		return "Kerberos towards the metastore failed: is the KDC of krb5_conf reachable, and do the clocks agree? Check hms_auth and the error"
	case strings.Contains(msg, "certificate") || strings.Contains(msg, "tls:") || strings.Contains(msg, "TLS"):
		return "TLS towards the metastore failed: check hms_tls (ca_file signs the metastore's certificate, server_name matches it), or switch hms_tls.enabled off if the metastore has hive.metastore.use.SSL=false"
	case c.TLS != nil:
		return "is the metastore running at hms_uris, and does it serve TLS (hive.metastore.use.SSL)? Also check hms_framed and hms_timeout"
	}
	return "is the metastore running at hms_uris? Check the port (9083 by default), hms_framed (hive.metastore.thrift.framed.transport.enabled), whether it wants TLS (hms_tls) or Kerberos, and hms_timeout"
}
