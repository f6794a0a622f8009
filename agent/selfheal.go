package agent

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hmssync/hmssync/applier"
	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms"
	"github.com/hmssync/hmssync/internal/retry"
)

// poisonError is an event that cannot be decoded: retrying cannot help.
type poisonError struct {
	eventID   int64
	eventType string
	err       error
}

func (e *poisonError) Error() string {
	return fmt.Sprintf("event %d (%s) cannot be decoded: %v", e.eventID, e.eventType, e.err)
}
func (e *poisonError) Unwrap() error { return e.err }

// applyError is a batch the FE did not apply.
type applyError struct {
	from, to int64
	full     bool
	// objects are what the refused statement or items concern, as the
	// applier names them (nil: it cannot say).
	objects []change.Object
	err     error
}

func (e *applyError) Error() string {
	if e.full {
		return fmt.Sprintf("full refresh as of event %d: %v", e.to, e.err)
	}
	return fmt.Sprintf("apply events (%d, %d]: %v", e.from, e.to, e.err)
}
func (e *applyError) Unwrap() error { return e.err }

// failureClass sorts a step's failure into SPEC §2's three kinds (plus the loss of
// the master role, which is no failure at all).
type failureClass int

const (
	classTransient failureClass = iota
	classDeterministic
	classAuth
	// classConfig: the FE answered, but not as the configured one should (a
	// catalog it lacks, not a Doris envelope, a URL that is not an FE).
	classConfig
	classHMSConfig
	classRoleLost
)

func classify(err error) failureClass {
	if errors.Is(err, errLostLeadership) {
		return classRoleLost
	}
	var pe *poisonError
	if errors.As(err, &pe) {
		return classDeterministic
	}
	if hms.IsConfigError(err) {
		return classHMSConfig
	}
	var ae *applier.Error
	if errors.As(err, &ae) {
		switch ae.Class {
		case applier.Deterministic:
			return classDeterministic
		case applier.Auth:
			return classAuth
		case applier.Configuration:
			return classConfig
		}
	}
	return classTransient
}

func classLabel(err error) string {
	switch classify(err) {
	case classDeterministic:
		return "deterministic"
	case classAuth:
		return "auth"
	case classConfig:
		return "configuration"
	case classHMSConfig:
		return "hms_config"
	default:
		return "transient"
	}
}

// failed handles a step's failure and returns how long to wait before the next
// step. Deterministic failures self-heal (cursor -1: the next step full-refreshes
// and so jumps past the poison); transient ones back off exponentially with
// jitter; authentication and configuration failures retry slowly and loudly and
// never reset (a full refresh would get the same answer).
func (l *catalogLoop) failed(err error, bo *retry.Delay) time.Duration {
	class := classify(err)
	if class == classRoleLost {
		l.log.Info("master role ended during a step; continuing as follower", zap.Error(err))
		// The elector ends the term asynchronously; the wait returns as soon
		// as the role changes, and keeps a refused commit from spinning.
		return 100 * time.Millisecond
	}
	if errors.Is(err, errCursorChangedUnder) {
		// An operator's write, logged as such by commitFailed: not a failure
		// of this member; the next cycle starts from the new value. The
		// backoff still spaces the cycles, should the key keep changing.
		return bo.Next()
	}
	l.rec.failed(err, class)
	switch class {
	case classDeterministic:
		return l.selfHeal(err, bo)
	case classAuth:
		l.rec.retried("auth")
		wait := jitter(l.retry.AuthInterval)
		l.log.Error("FE refused hmssync's credentials: fix fe.user / the FE password (fe.password_file or HMSSYNC_FE_PASSWORD) or the user's privileges; the cursor is kept",
			zap.Error(err), zap.Duration("retry_in", wait))
		return wait
	case classConfig:
		l.rec.retried("configuration")
		wait := jitter(l.retry.AuthInterval)
		l.log.Error("FE configuration error: the FE answered, but not as the configured FE and catalog should (see the error for its answer; check fe.url, fe.dialect and catalogs[].name); the cursor is kept",
			zap.Error(err), zap.Duration("retry_in", wait))
		return wait
	case classHMSConfig:
		// Kerberos or SASL set up wrongly, here or on the metastore: only a
		// fix helps (a new keytab, a metastore setting), so retry slowly and
		// fail /readyz until a step succeeds; the cursor is kept.
		l.rec.retried("hms_config")
		wait := jitter(l.retry.AuthInterval)
		l.log.Error("metastore connection misconfigured; fix what the error names; the cursor is kept",
			zap.Error(err), zap.Duration("retry_in", wait))
		return wait
	default:
		l.rec.retried("transient")
		wait := bo.Next()
		l.log.Warn("transient failure; retrying in place", zap.Error(err), zap.Int64("cursor", l.cursor.Value()), zap.Duration("retry_in", wait))
		return wait
	}
}

// selfHeal handles a deterministic failure (heal.go). When the FE refused
// changes of objects it names, the next step heals those objects at the next
// scope up; otherwise, or once the database's heal was refused too, the cursor
// becomes -1, so the next step full-refreshes the catalog and continues after
// the poison. A full refresh that itself failed deterministically cannot heal
// by another at once: it backs off.
func (l *catalogLoop) selfHeal(err error, bo *retry.Delay) time.Duration {
	fields := []zap.Field{zap.Error(err), zap.Int64("cursor", l.cursor.Value())}
	heal := healRecord{scope: healCatalog, err: shorten(err.Error(), maxStatusError), at: time.Now()}
	var pe *poisonError
	if errors.As(err, &pe) {
		heal.eventID, heal.eventType = pe.eventID, pe.eventType
		fields = append(fields, zap.Int64("event_id", pe.eventID), zap.String("event_type", pe.eventType))
	}
	var ae *applyError
	if errors.As(err, &ae) {
		fields = append(fields, zap.Int64("from_event_id", ae.from), zap.Int64("to_event_id", ae.to))
		if ae.full {
			l.log.Error("FE rejected the full refresh; retrying with backoff", fields...)
			l.rec.retried("deterministic")
			return bo.Next()
		}
		if len(ae.objects) > 0 && l.heal.escalate(ae.objects, heal.err, l.keep) {
			l.log.Warn("FE refused changes of the objects it names: the next step refreshes just those instead (a refused table heal escalates to its database, a refused database heal to the catalog)",
				append(fields, zap.Stringers("objects", objectNames(ae.objects)))...)
			return 0
		}
	}
	l.heal.forget()
	l.rec.healed(heal)
	l.log.Error("deterministic failure: self-healing with a full refresh (cursor -1)", fields...)
	l.cursor.reset("self_heal")
	return 0
}

// healed reports heals that reached the FE: logged, counted, shown in /status,
// and flagged when an object keeps needing them.
func (l *catalogLoop) healed(heals []healRecord) {
	if len(heals) == 0 {
		return
	}
	now := time.Now()
	counts, looping := l.heal.applied(heals, now)
	for i, h := range heals {
		h.at = now
		l.rec.healed(h)
		fields := []zap.Field{zap.Stringer("object", objectName(h.object)), zap.Stringer("scope", h.scope),
			zap.Int64("event_id", h.eventID), zap.String("event_type", h.eventType), zap.String("error", h.err)}
		l.log.Warn("self-healed a deterministic failure by refreshing the object it concerns", fields...)
		if looping[i] {
			l.log.Error("an object keeps failing: healed more than self_heal.max_per_hour times in the last hour; each of its poison events is still healed by refreshing it (fix its metadata on the metastore, or exclude it)",
				append(fields, zap.Int("heals_last_hour", counts[i]), zap.Int("max_per_hour", l.heal.maxPerHour))...)
		}
	}
	l.rec.healLoops(l.heal.looping(now), now)
}

// objectName prints an object as db.table, or db.
type objectName change.Object

func (o objectName) String() string {
	if o.Table == "" {
		return o.DB
	}
	return o.DB + "." + o.Table
}

func objectNames(objs []change.Object) []fmt.Stringer {
	out := make([]fmt.Stringer, len(objs))
	for i, o := range objs {
		out[i] = objectName(o)
	}
	return out
}
