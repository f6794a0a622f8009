// Package names validates the names an operator gives hmssync that become parts
// of etcd keys or name FE objects: the cluster, a member, a catalog and the etcd
// key prefix. `run` and the operator commands (status, cursor) check them here,
// so that both accept exactly the same names and a key written by one is found
// by the other.
package names

import (
	"fmt"
	"regexp"
	"strings"
)

// MaxLen is the longest name (a prefix may be twice as long).
const MaxLen = 128

var (
	nameRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	prefixRe = regexp.MustCompile(`^(/[A-Za-z0-9._-]+)+$`)
)

const nameRule = "want 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"

func check(name string) error {
	if !nameRe.MatchString(name) || len(name) > MaxLen {
		return fmt.Errorf("%q: %s", name, nameRule)
	}
	return nil
}

// Cluster checks a cluster name (one segment of every etcd key of the cluster).
func Cluster(name string) error { return check(name) }

// Member checks a member name (one segment of the member's etcd keys).
func Member(name string) error { return check(name) }

// Catalog checks an FE catalog name (one segment of the catalog's etcd keys).
// Catalog names are compared without regard to case (SameCatalog).
func Catalog(name string) error { return check(name) }

// SameCatalog reports whether two catalog names name the same catalog: Doris
// compares catalog names without regard to case, so "Hive" and "hive" are one.
func SameCatalog(a, b string) bool { return strings.EqualFold(a, b) }

// Prefix checks an etcd key prefix such as /hmssync: segments of letters,
// digits, '.', '_' or '-', each after a '/', no trailing '/'. Spaces, newlines
// and other bytes would make keys ambiguous or unreadable in etcdctl.
func Prefix(prefix string) error {
	if !prefixRe.MatchString(prefix) || len(prefix) > 2*MaxLen {
		return fmt.Errorf("%q: want a key prefix of up to %d characters such as /hmssync: segments of letters, digits, '.', '_' or '-', each after a '/', not ending with '/'", prefix, 2*MaxLen)
	}
	return nil
}
