package applier

import (
	"errors"
	"fmt"

	"github.com/hmssync/hmssync/change"
)

// Class says what the caller should do about a failed Apply or Check.
type Class int

const (
	// Transient failures (FE unreachable, timeouts, 5xx, internal errors) are
	// retried in place with backoff; the cursor does not move.
	Transient Class = iota
	// Deterministic failures (the FE rejected a statement or batch for a reason
	// that retrying will not change) make the caller self-heal past the poison
	// event: at the scope of the Error's Objects when it names any, else by a
	// full refresh.
	Deterministic
	// Auth: the FE refused hmssync's credentials or privileges (HTTP 401 or
	// 403, Doris's code 401, "access denied"). Reported loudly as a credentials
	// problem and retried slowly; the cursor is kept: a full refresh would fail
	// the same way.
	Auth
	// Configuration: the FE answered, but not as the configured one should (a
	// catalog it does not have, an answer that is not a Doris envelope, a URL
	// that is not an FE, a request that could not even be built). Handled like
	// Auth (loud, slow retry, cursor kept), but the error says what the FE
	// answered instead of blaming the password.
	Configuration
)

// String returns the class's lower-case name, as used in logs and metrics.
func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Deterministic:
		return "deterministic"
	case Auth:
		return "auth"
	case Configuration:
		return "configuration"
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Error is the error every applier returns from Apply and Check.
type Error struct {
	Class   Class
	Dialect string
	// FE is the frontend's URL ("" for the log dialect).
	FE string
	// Statement is the SQL statement (doris) or request (native) that failed, ""
	// when the failure came before anything was sent.
	Statement string
	// Objects are the databases and tables the refused statement (doris) or
	// items (native) concern; nil when the applier cannot say (a catalog
	// statement, an FE that does not name what it rejected, a failure before
	// anything was sent).
	Objects []change.Object
	Err     error
}

func (e *Error) Error() string {
	where := e.Dialect
	if e.FE != "" {
		where += " FE " + e.FE
	}
	if e.Statement != "" {
		return fmt.Sprintf("%s: %s: %v (%s)", where, e.Statement, e.Err, e.Class)
	}
	return fmt.Sprintf("%s: %v (%s)", where, e.Err, e.Class)
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of the first *Error in err's chain. Errors that carry
// no class (a cancelled context, say) are Transient: retrying is always safe,
// resetting the cursor is not.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return Transient
}
