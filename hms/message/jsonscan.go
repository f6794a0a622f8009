package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// jsonScanner reads the few fields the decoder needs straight from a JSON text,
// skipping everything else without building a tree. HMS messages are dominated by
// large embedded objects the decoder mostly ignores; generic decoding (encoding/json
// into maps or structs) spends most of its time on those and is several times
// slower. The scanner never writes to its input and reports malformed input as an
// error, never by panicking.
type jsonScanner struct {
	b []byte
	i int
}

var errUnexpectedEnd = errors.New("unexpected end of JSON")

// errStop, returned by an object callback, ends the object early: the reader has
// what it needs and the rest of the text is not read.
var errStop = errors.New("stop reading")

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *jsonScanner) syntax(what string) error {
	if s.i >= len(s.b) {
		return fmt.Errorf("%w (%s)", errUnexpectedEnd, what)
	}
	return fmt.Errorf("invalid JSON at offset %d: %s, found %q", s.i, what, s.b[s.i])
}

func (s *jsonScanner) expect(c byte) error {
	if s.peek() != c {
		return s.syntax("want " + strconv.QuoteRune(rune(c)))
	}
	s.i++
	return nil
}

// end reports an error unless only white space is left.
func (s *jsonScanner) end() error {
	if s.peek() != 0 {
		return s.syntax("want end of text")
	}
	return nil
}

// null consumes a JSON null if one is next.
func (s *jsonScanner) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object calls fn for each member of the object at the cursor with the member's raw
// key; fn must consume the member's value.
func (s *jsonScanner) object(fn func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, _, err := s.rawString()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.syntax("want ',' or '}' in object")
		}
	}
}

// array calls fn for each element of the array at the cursor; fn must consume it.
func (s *jsonScanner) array(fn func(i int) error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if err := fn(n); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.syntax("want ',' or ']' in array")
		}
	}
}

// quoteOrBackslash marks the bytes that end a run of plain bytes in a string.
var quoteOrBackslash = [256]bool{'"': true, '\\': true}

// rawString reads a string and returns its contents between the quotes, still
// escaped, and whether it contains escapes at all.
func (s *jsonScanner) rawString() (raw []byte, escaped bool, err error) {
	if err := s.expect('"'); err != nil {
		return nil, false, err
	}
	// A byte loop rather than bytes.IndexByte: embedded objects are strings full of
	// \" escapes, where IndexByte's per-call cost dominates. The inner loop only
	// looks bytes up in a table, which costs less than a switch on each byte.
	start := s.i
	b := s.b
	for i := start; ; i += 2 {
		for i < len(b) && !quoteOrBackslash[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		if b[i] == '"' {
			s.i = i + 1
			return b[start:i], escaped, nil
		}
		escaped = true // and the escaped byte is skipped
	}
	s.i = len(b)
	return nil, false, s.syntax("unterminated string")
}

// checkedString is rawString for a string the decoder may unescape later, and
// only in part: every escape in it is checked now, so that a bad escape is an
// error whether or not the part holding it is ever unescaped.
func (s *jsonScanner) checkedString() (raw []byte, escaped bool, err error) {
	if err := s.expect('"'); err != nil {
		return nil, false, err
	}
	start := s.i
	b := s.b
	i := start
	for {
		for i < len(b) && !quoteOrBackslash[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		if b[i] == '"' {
			s.i = i + 1
			return b[start:i], escaped, nil
		}
		escaped = true
		if i+1 >= len(b) {
			break
		}
		if simpleEscape[b[i+1]] != 0 {
			i += 2
			continue
		}
		if b[i+1] != 'u' {
			s.i = i
			return nil, false, fmt.Errorf("invalid JSON string: unknown escape \\%c", b[i+1])
		}
		if _, ok := hex4(b[i+2:]); !ok {
			s.i = i
			return nil, false, errors.New(`invalid JSON string: bad \u escape`)
		}
		i += 6
	}
	s.i = len(b)
	return nil, false, s.syntax("unterminated string")
}

// str reads a string value and returns it unescaped. ok is false for null.
func (s *jsonScanner) str() (v string, ok bool, err error) {
	if s.null() {
		return "", false, nil
	}
	if s.peek() != '"' {
		return "", false, s.syntax("want a string")
	}
	raw, escaped, err := s.rawString()
	if err != nil {
		return "", false, err
	}
	if !escaped {
		return string(raw), true, nil
	}
	b, err := unescape(nil, raw)
	if err != nil {
		return "", false, err
	}
	return string(b), true, nil
}

// strLike is str without ok, returning like itself when the value is the same
// string: the db and table of a message are mostly those of the event's header,
// which then need no copy of their own.
func (s *jsonScanner) strLike(like string) (string, error) {
	if s.peek() == '"' {
		start := s.i
		raw, escaped, err := s.rawString()
		if err == nil && !escaped && string(raw) == like {
			return like, nil
		}
		s.i = start
	}
	v, _, err := s.str()
	return v, err
}

// strView is str for a value the decoder only looks at while it decodes: a
// string without escapes is a view of the text, valid as long as the text (the
// message or the decode buffers), not a copy. null is "".
func (s *jsonScanner) strView() (string, error) {
	if s.null() {
		return "", nil
	}
	if s.peek() != '"' {
		return "", s.syntax("want a string")
	}
	raw, escaped, err := s.rawString()
	if err != nil {
		return "", err
	}
	if !escaped {
		return unsafe.String(unsafe.SliceData(raw), len(raw)), nil
	}
	b, err := unescape(nil, raw)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// int reads an integer number.
func (s *jsonScanner) int() (int64, error) {
	s.ws()
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || (s.b[s.i] >= '0' && s.b[s.i] <= '9')) {
		s.i++
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		return 0, s.syntax("want an integer")
	}
	return n, nil
}

// skip consumes one value of any kind. It checks brackets nest properly but is
// otherwise lenient about values it is not asked to read.
func (s *jsonScanner) skip() error {
	var stack []byte // open brackets, only allocated for nested values
	for {
		switch c := s.peek(); c {
		case 0:
			return s.syntax("want a value")
		case '{', '[':
			stack = append(stack, c)
			s.i++
		case '}', ']':
			if len(stack) == 0 || (stack[len(stack)-1] == '{') != (c == '}') {
				return s.syntax("unbalanced bracket")
			}
			stack = stack[:len(stack)-1]
			s.i++
		case '"':
			if _, _, err := s.rawString(); err != nil {
				return err
			}
		case ',', ':':
			if len(stack) == 0 {
				return s.syntax("want a value")
			}
			s.i++
		default:
			start := s.i
			for s.i < len(s.b) && isScalarByte(s.b[s.i]) {
				s.i++
			}
			if s.i == start {
				return s.syntax("want a value")
			}
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

func isScalarByte(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E'
}

const (
	lowBits  = 0x0101010101010101 // the lowest bit of each byte of a word
	highBits = 0x8080808080808080 // the highest bit of each byte
)

// zeroBytes returns the high bit of each byte of x that is zero, and 0 in every
// other bit. Exact, unlike the shorter (x-lowBits)&^x&highBits, which can also
// mark a 0x01 byte above a zero one: no byte's sum carries into the next, as
// (x&0x7f)+0x7f <= 0xfe.
func zeroBytes(x uint64) uint64 {
	const low7 = ^uint64(highBits)
	return ^((x&low7 + low7) | x) & highBits
}

// simpleEscape maps the byte after a backslash to what it stands for; 0 for \u
// and invalid escapes.
var simpleEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unescape appends the unescaped contents of a JSON string (without quotes) to dst.
func unescape(dst, raw []byte) ([]byte, error) {
	dst, _, err := unescapeUpTo(dst, raw, len(raw))
	return dst, err
}

// unescapeUpTo appends the unescaped contents of raw (a JSON string without its
// quotes) to dst until it has appended at least want bytes or raw ends, and
// returns how many bytes of raw it consumed; it stops only between escapes,
// never inside one. One pass, writing into dst grown once: embedded objects are
// long strings full of escapes, where appending byte by byte costs twice as much.
func unescapeUpTo(dst, raw []byte, want int) ([]byte, int, error) {
	start := len(dst)
	// An escape never unescapes to more bytes than it takes, and one escape
	// adds at most utf8.UTFMax bytes past want. A word copy can go up to seven
	// bytes past it too: it runs only where dst has room for all eight, and
	// the escape after it grows dst if it must.
	dst = slices.Grow(dst, min(len(raw), want+utf8.UTFMax))
	dst = dst[:cap(dst)]
	k, limit := start, start+want
	i := 0
	for i < len(raw) && k < limit {
		if i+8 <= len(raw) && k+8 <= len(dst) {
			// Eight bytes at a time: copy them whole, then keep those
			// before the first backslash among them. Runs of plain bytes
			// between escapes are short, and a loop over bytes took a
			// branch per byte.
			w := binary.LittleEndian.Uint64(raw[i:])
			binary.LittleEndian.PutUint64(dst[k:], w)
			slashes := zeroBytes(w ^ (lowBits * '\\'))
			if slashes == 0 {
				i, k = i+8, k+8
				continue
			}
			n := bits.TrailingZeros64(slashes) >> 3
			i, k = i+n, k+n // raw[i] is a backslash
		} else if c := raw[i]; c != '\\' {
			dst[k] = c
			k++
			i++
			continue
		}
		if i+1 >= len(raw) {
			return dst[:k], i, errors.New("invalid JSON string: ends with a backslash")
		}
		if e := simpleEscape[raw[i+1]]; e != 0 {
			dst[k] = e
			k++
			i += 2
			continue
		}
		if raw[i+1] != 'u' {
			return dst[:k], i, fmt.Errorf("invalid JSON string: unknown escape \\%c", raw[i+1])
		}
		r, ok := hex4(raw[i+2:])
		if !ok {
			return dst[:k], i, errors.New(`invalid JSON string: bad \u escape`)
		}
		i += 6
		if utf16.IsSurrogate(r) {
			// A high surrogate must be followed by an escaped low one.
			r2, ok := rune(-1), false
			if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				r2, ok = hex4(raw[i+2:])
			}
			if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
				r = d
				i += 6
			} else {
				r = utf8.RuneError
			}
		}
		if len(dst)-k < utf8.UTFMax { // only after a word copy that stopped late in the word
			dst = slices.Grow(dst[:k], utf8.UTFMax)
			dst = dst[:cap(dst)]
		}
		k += utf8.EncodeRune(dst[k:], r)
	}
	return dst[:k], i, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
