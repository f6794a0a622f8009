package applier

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// quoteIdent returns name as a Doris backtick-quoted identifier. Inside backticks
// the lexer knows exactly one escape, a doubled backtick, so doubling every
// backtick is all it takes: quotes, semicolons, newlines, comment markers and
// backslashes are plain characters there and cannot end the identifier.
func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// qualified joins names as `a`.`b`.`c`.
func qualified(names ...string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteIdent(n)
	}
	return strings.Join(q, ".")
}

// checkName rejects names that quoting cannot carry faithfully. An empty name
// is not an identifier, and invalid UTF-8 would be replaced by U+FFFD on its
// way through JSON, silently naming another object (whose "does not exist"
// would then count as success).
func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("empty %s name", what)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%s name %q is not valid UTF-8", what, name)
	}
	return nil
}
