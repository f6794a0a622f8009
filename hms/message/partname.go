package message

import (
	"fmt"
	"strings"
)

// DefaultPartitionName is the name Hive gives a partition value that is null or
// empty (hive.exec.default.partition.name).
const DefaultPartitionName = "__HIVE_DEFAULT_PARTITION__"

// PartitionName returns Hive's name for the partition with the given values of the
// table's partition keys, in the table's key order (FileUtils.makePartName):
// escape(lower(key))=escape(value) joined by "/": Hive lower-cases the keys, never
// the values. A null or empty value is DefaultPartitionName.
func PartitionName(keys, values []string) (string, error) {
	if len(keys) != len(values) {
		return "", fmt.Errorf("partition has %d values for %d partition keys %q", len(values), len(keys), keys)
	}
	if len(keys) == 0 {
		return "", fmt.Errorf("table has no partition keys")
	}
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('/')
		}
		appendEscaped(&b, strings.ToLower(k))
		b.WriteByte('=')
		v := values[i]
		if v == "" {
			v = DefaultPartitionName
		}
		appendEscaped(&b, v)
	}
	return b.String(), nil
}

// EscapePathName escapes s as Hive's FileUtils.escapePathName does for partition
// names: each character below 0x20, DEL, or one of " # % ' * / : = ? \ { [ ] ^
// becomes %XX with upper-case hex digits; everything else (non-ASCII included) is
// kept. All escaped characters are ASCII, so working on UTF-8 bytes is equivalent to
// Hive working on UTF-16 chars.
func EscapePathName(s string) string {
	var b strings.Builder
	appendEscaped(&b, s)
	return b.String()
}

func appendEscaped(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
			continue
		}
		b.WriteByte(c)
	}
}

func needsEscape(c byte) bool {
	if c < 0x20 || c == 0x7F {
		return true
	}
	switch c {
	case '"', '#', '%', '\'', '*', '/', ':', '=', '?', '\\', '{', '[', ']', '^':
		return true
	}
	return false
}
