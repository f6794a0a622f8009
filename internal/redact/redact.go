// Package redact is the one redaction every printed URL goes through: a URL
// may carry a password in its user information (http://user:secret@host), and
// errors and logs that echo what an operator configured must not repeat it.
package redact

import (
	"net/url"
	"strings"
)

// Redacted replaces the user information of a URL.
const Redacted = "REDACTED"

// URL returns raw with any user information replaced by REDACTED. Text that
// does not parse as a URL is redacted by its shape: whatever lies between
// "://" and the last '@' of the authority.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if u.User == nil {
			return raw
		}
		u.User = url.User(Redacted)
		return u.String()
	}
	start := strings.Index(raw, "://")
	if start < 0 {
		start = 0
	} else {
		start += 3
	}
	end := len(raw)
	if i := strings.IndexAny(raw[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndex(raw[start:end], "@")
	if at < 0 {
		return raw
	}
	return raw[:start] + Redacted + raw[start+at:]
}

// URLs redacts each of raws.
func URLs(raws []string) []string {
	out := make([]string, len(raws))
	for i, r := range raws {
		out[i] = URL(r)
	}
	return out
}

// HasUserInfo reports whether raw carries user information.
func HasUserInfo(raw string) bool { return URL(raw) != raw }
