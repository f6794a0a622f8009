package message

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzUnescape compares the decoder's unescaping of a JSON string with
// encoding/json's, and checks the prefix form (unescapeUpTo): what it appends is
// a prefix of the whole, at least the bytes asked for, and unescaping the rest
// of the input after it completes the whole. Seeds: the escapes Hive's
// embedded objects hold, at every offset in an eight-byte word.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{
		`{\"1\":{\"str\":\"orders\"},\"2\":{\"lst\":[\"str\",2,\"2024\",\"eu\"]}}`,
		`plain text longer than one word, no escapes at all`,
		`\\\\\\\"\/\b\f\n\r\t`,
		`caf\u00e9 \ud83d\ude00 \ud800 alone \udc00`,
		`ends with a backslash\`,
		`bad \x escape`, `bad \u12 escape`,
	} {
		for pad := range 8 {
			f.Add(strings.Repeat("p", pad)+s, pad*3)
		}
	}
	f.Fuzz(func(t *testing.T, raw string, want int) {
		whole, err := unescape(nil, []byte(raw))
		if ref, ok := jsonUnescape(raw); ok {
			if err != nil || !bytes.Equal(whole, ref) {
				t.Fatalf("unescape(%q) = %q, %v; encoding/json gives %q", raw, whole, err, ref)
			}
		}
		if err != nil {
			return
		}
		want = max(0, want%(len(raw)+2))
		prefix := []byte("earlier text")
		got, n, err := unescapeUpTo(prefix, []byte(raw), want)
		if err != nil {
			t.Fatalf("unescapeUpTo(%q, %d): %v; the whole unescapes", raw, want, err)
		}
		if !bytes.HasPrefix(got, []byte("earlier text")) {
			t.Fatalf("unescapeUpTo(%q, %d) changed what dst held: %q", raw, want, got)
		}
		part := got[len("earlier text"):]
		if !bytes.HasPrefix(whole, part) || (len(part) < want && n != len(raw)) {
			t.Fatalf("unescapeUpTo(%q, %d) = %q (consumed %d); the whole is %q", raw, want, part, n, whole)
		}
		rest, err := unescape(part, []byte(raw[n:]))
		if err != nil || !bytes.Equal(rest, whole) {
			t.Fatalf("unescapeUpTo(%q, %d) stopped at %d inside an escape: the rest gives %q, %v", raw, want, n, rest, err)
		}
	})
}

// jsonUnescape is encoding/json's reading of raw as a string's contents, when
// encoding/json reads it the way the decoder must: valid UTF-8, no control
// bytes and no unescaped quote.
func jsonUnescape(raw string) ([]byte, bool) {
	if !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 }) {
		return nil, false
	}
	var s string
	if err := json.Unmarshal([]byte(`"`+raw+`"`), &s); err != nil {
		return nil, false
	}
	return []byte(s), true
}
