package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:2379", "http://127.0.0.1:2379"},
		{"http://root:hunter2@fe:8030", "http://REDACTED@fe:8030"},
		{"thrift://hive@hms:9083", "thrift://REDACTED@hms:9083"},
		{"http://root:hunter2@fe:8030/%zz", "http://REDACTED@fe:8030/%zz"}, // does not parse
		{"http://a:b@c:hunter2@fe:8030/x", "http://REDACTED@fe:8030/x"},    // parses; user a, password "b@c:hunter2"
		{"root:hunter2@fe:8030 x\x7f", "REDACTED@fe:8030 x\x7f"},           // no scheme, does not parse
		{"http://fe:8030/path@x", "http://fe:8030/path@x"},                 // an '@' in the path is no user
		{"", ""},
	} {
		got := URL(c.in)
		if got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("URL(%q) = %q keeps the password", c.in, got)
		}
	}
}
