package hms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
)

// configUnset is the default hmssync sends with get_config_value. The metastore
// answers with the default it was given when it has neither a value nor a
// default of its own for the name (a setting its version or distribution does
// not know), so this answer means "not known here" rather than a value.
const configUnset = "hmssync:not-set"

// maxConfigReplyBytes bounds a get_config_value reply: one string, a setting's
// value. The longest real ones (listener class lists) are a few hundred bytes.
const maxConfigReplyBytes = 1 << 20

// maxConfigNameBytes bounds the setting names ConfigValue asks for (they come
// from hmssync's code, not from the wire; the bound keeps a mistaken caller
// from sending megabytes).
const maxConfigNameBytes = 1024

// ConfigValue is one of the metastore's settings as get_config_value revealed
// it.
type ConfigValue struct {
	// Name is the setting, e.g. hive.metastore.dml.events.
	Name string
	// Value is the metastore's value, or its default when it sets none.
	// Empty when Known is false.
	Value string
	// Known is false when the metastore has no value and no default for the
	// name (its version does not know the setting), or refused to tell.
	Known bool
	// Refused is the metastore's reason when it refused to reveal the setting
	// (ConfigValSecurityException: Hive answers only hive.*, hdfs.*, mapred.*
	// and metastore.* names; an authorization plugin may refuse more).
	Refused string
}

// ConfigValue reads one of the metastore's settings (get_config_value). A
// refusal is not an error: it is reported in the answer's Refused. The call is
// bounded by ctx and the client's call timeout; the reply by a 1 MiB budget.
func (c *Client) ConfigValue(ctx context.Context, name string) (ConfigValue, error) {
	if name == "" || len(name) > maxConfigNameBytes {
		return ConfigValue{}, fmt.Errorf("hms get_config_value: setting name of %d bytes; want 1 to %d", len(name), maxConfigNameBytes)
	}
	cv := ConfigValue{Name: name}
	lim := callLimit{method: "get_config_value", maxElements: minEventElements, maxBytes: min(c.cfg.MaxReplyBytes, maxConfigReplyBytes)}
	err := c.callLimited(ctx, lim, func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
		v, err := cl.GetConfigValue(ctx, name, configUnset)
		var sec *hmsthrift.ConfigValSecurityException
		var ae thrift.TApplicationException
		switch {
		case err == nil && v == configUnset:
		case err == nil:
			cv.Value, cv.Known = v, true
		case errors.As(err, &sec):
			cv.Refused = sec.Message
			if cv.Refused == "" {
				cv.Refused = "ConfigValSecurityException without a message"
			}
		case errors.As(err, &ae) && ae.TypeId() == thrift.UNKNOWN_METHOD:
			cv.Refused = "the metastore does not offer get_config_value"
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return ConfigValue{}, err
	}
	return cv, nil
}

// DefaultTxnTimeout is Hive's default hive.txn.timeout: a transaction that sent
// no heartbeat for that long is aborted by the metastore.
const DefaultTxnTimeout = 300 * time.Second

// TxnTimeout is the metastore's hive.txn.timeout. ok is false when the
// metastore does not reveal it (refused, or not known to its version); the
// caller then uses DefaultTxnTimeout or its own setting.
func (c *Client) TxnTimeout(ctx context.Context) (d time.Duration, ok bool, err error) {
	cv, err := c.ConfigValue(ctx, "hive.txn.timeout")
	if err != nil || !cv.Known {
		return 0, false, err
	}
	d, err = ParseHiveDuration(cv.Value, time.Second)
	if err != nil {
		return 0, false, fmt.Errorf("hms: hive.txn.timeout: %w", err)
	}
	return d, true, nil
}

// hiveTimeUnits are the unit suffixes Hive's time settings accept
// (HiveConf.TimeValidator / MetastoreConf: d, h, m, s, ms, us, ns and their
// long forms).
var hiveTimeUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"ms": time.Millisecond, "msec": time.Millisecond, "msecs": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"us": time.Microsecond, "usec": time.Microsecond, "usecs": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ns": time.Nanosecond, "nsec": time.Nanosecond, "nsecs": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
}

// ParseHiveDuration parses a Hive time setting: a whole number with an
// optional unit ("86400s", "1d", "300"); a number without a unit is in
// defaultUnit, the setting's own (seconds for the listener TTL and
// hive.txn.timeout). Values beyond time.Duration's range are refused.
func ParseHiveDuration(s string, defaultUnit time.Duration) (time.Duration, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 || i > 19 {
		return 0, fmt.Errorf("time value %q: want a whole number with an optional unit (d, h, m, s, ms)", truncate(s, 64))
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time value %q: %w", truncate(s, 64), err)
	}
	unit := defaultUnit
	if suffix := strings.TrimSpace(t[i:]); suffix != "" {
		u, ok := hiveTimeUnits[suffix]
		if !ok {
			return 0, fmt.Errorf("time value %q: unknown unit %q; want d, h, m, s, ms, us or ns", truncate(s, 64), truncate(suffix, 16))
		}
		unit = u
	}
	if n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("time value %q: longer than %v", truncate(s, 64), time.Duration(math.MaxInt64))
	}
	return time.Duration(n) * unit, nil
}

// truncate cuts s to at most n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
