package message

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"io"
	"strings"
	"sync"
	"unsafe"
)

// Message formats Hive writes (hive.metastore.event.message.factory).
const (
	FormatJSON = "json-0.2"       // the message is the JSON text
	FormatGzip = "gzip(json-2.0)" // standard base64 of the gzip of the JSON text
)

// gzipMagicBase64 is how every base64-encoded gzip stream starts (1f 8b 08).
const gzipMagicBase64 = "H4sI"

// MaxInflatedMessage bounds a decompressed message so that a corrupt or hostile
// gzip stream cannot exhaust memory (a 1.4 MB bomb inflates to 1.4 GB). Hive's
// largest messages (thousands of partitions with their objects) are tens of
// megabytes. The inflate buffer grows to at most this plus one byte, so one
// message costs at most 1.5 times this while it inflates (old and new buffer).
const MaxInflatedMessage = 64 << 20

// decodeBuffers are the scratch buffers of one Decode call, pooled because a
// gzip reader and the buffers for a message cost more to allocate than decoding a
// small message does.
type decodeBuffers struct {
	b64     []byte
	text    []byte // the inflated message
	gz      *gzip.Reader
	escaped []byte // unescaped embedded objects of the current message
	rd      bytes.Reader
	fields  messageFields // the current message's members
	budget  nameBudget    // of the current message
	values  [2][]string   // scratch lists of partition values (eventDecoder.partition)
	// fullReading: no shortcuts (Decoder.fullReading).
	fullReading bool
	// tables is the decoder's table cache (Decoder.tables); nil: none.
	tables *tableCache
	// name is the table of the current event's header, whose known text the
	// tables it reads become (tableCache.known).
	name tableName
}

var decodeBufferPool = sync.Pool{New: func() any { return new(decodeBuffers) }}

func getDecodeBuffers() *decodeBuffers {
	bufs := decodeBufferPool.Get().(*decodeBuffers)
	bufs.tables = nil
	bufs.name = tableName{}
	bufs.escaped = bufs.escaped[:0]
	bufs.fields.reset()
	return bufs
}

// maxPooledBuffer keeps the buffers of an exceptionally large message from being
// held by the pool for ever.
const maxPooledBuffer = 8 << 20

func putDecodeBuffers(bufs *decodeBuffers) {
	if cap(bufs.escaped) > maxPooledBuffer || cap(bufs.b64) > maxPooledBuffer || cap(bufs.text) > maxPooledBuffer ||
		cap(bufs.fields.partitionList)*embeddedTextBytes > maxPooledBuffer ||
		max(cap(bufs.values[0]), cap(bufs.values[1]))*stringHeaderBytes > maxPooledBuffer {
		return
	}
	// The pool must not keep the message alive.
	bufs.fields.reset()
	bufs.name = tableName{}
	for i := range bufs.values {
		clear(bufs.values[i])
		bufs.values[i] = bufs.values[i][:0]
	}
	decodeBufferPool.Put(bufs)
}

// isGzip reports whether a message in format is gzip(json-...) rather than JSON;
// an unknown format is an error.
func isGzip(format, message string) (bool, error) {
	switch {
	case strings.HasPrefix(format, "gzip("):
		return true, nil
	case strings.HasPrefix(format, "json"):
		return false, nil
	case format == "":
		return strings.HasPrefix(message, gzipMagicBase64), nil
	}
	return false, fmt.Errorf("unsupported messageFormat %q (want %s or %s)", format, FormatJSON, FormatGzip)
}

// messageText returns the JSON text of e's message. The result is valid until bufs
// is reused; for JSON messages it aliases e.Message, which is never written to.
func (bufs *decodeBuffers) messageText(e Event) ([]byte, error) {
	gz, err := isGzip(e.Format, e.Message)
	if err != nil {
		return nil, err
	}
	if !gz {
		// The scanner only reads the text, so it can be the message's own
		// bytes: converting would copy every JSON message once more.
		return unsafe.Slice(unsafe.StringData(e.Message), len(e.Message)), nil
	}
	n := base64.StdEncoding.DecodedLen(len(e.Message))
	if cap(bufs.b64) < n {
		bufs.b64 = make([]byte, n)
	}
	// base64 only reads its input, so it can be the message's own bytes too.
	n, err = base64.StdEncoding.Decode(bufs.b64[:n], unsafe.Slice(unsafe.StringData(e.Message), len(e.Message)))
	if err != nil {
		return nil, fmt.Errorf("message is not valid base64: %w", err)
	}
	bufs.rd.Reset(bufs.b64[:n])
	if bufs.gz == nil {
		bufs.gz, err = gzip.NewReader(&bufs.rd)
	} else {
		err = bufs.gz.Reset(&bufs.rd)
	}
	if err != nil {
		return nil, fmt.Errorf("message is not valid gzip: %w", err)
	}
	bufs.text, err = inflate(bufs.text[:0], bufs.gz, MaxInflatedMessage)
	if errors.Is(err, errInflatedTooLarge) {
		return nil, fmt.Errorf("message decompresses to more than %d bytes (%d compressed); hmssync refuses it as a decompression bomb", MaxInflatedMessage, n)
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("truncated gzip stream")
		}
		return nil, fmt.Errorf("message is not valid gzip: %w", err)
	}
	return bufs.text, nil
}

var errInflatedTooLarge = errors.New("inflated message too large")

// inflate appends what r yields to dst, refusing more than limit bytes. Unlike
// bytes.Buffer.ReadFrom, which doubles past any limit (a 256 MiB limit let a bomb
// hold 0.9 GiB), the buffer never grows beyond limit+1 bytes.
func inflate(dst []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			if len(dst) > limit {
				return nil, errInflatedTooLarge
			}
			grown := make([]byte, len(dst), min(max(2*cap(dst), 64<<10), limit+1))
			copy(grown, dst)
			dst = grown
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return nil, errInflatedTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// embeddedText is an object Hive embeds in its message as a JSON string (a
// Thrift-JSON Table, Partition or Database), as it stands in the message: the
// string's contents, still escaped, its escapes already checked. It is
// unescaped only if the event type needs it, and only as far as needed: most of
// a Partition is its storage descriptor, after the values the decoder reads.
type embeddedText struct {
	raw     []byte // between the quotes; aliases the message text
	escaped bool   // raw holds escapes
	set     bool   // the member was a string, not null or absent
}

// embeddedString reads a JSON string holding an embedded object; null gives an
// unset embeddedText.
func embeddedString(s *jsonScanner) (embeddedText, error) {
	if s.null() {
		return embeddedText{}, nil
	}
	if s.peek() != '"' {
		return embeddedText{}, s.syntax("want a string")
	}
	raw, escaped, err := s.checkedString()
	return embeddedText{raw: raw, escaped: escaped, set: true}, err
}

// knownString reads the JSON string at the cursor if its contents are exactly
// k.text, a table text read from an earlier message, and reports whether it
// did; otherwise it consumes nothing. Comparing bytes gives what scanning would:
// k.text was the whole contents of a string, so its closing quote was not
// escaped, and the same bytes followed by a quote end the string at the same
// place here; its escapes were checked, and checking is a function of the bytes.
func knownString(s *jsonScanner, k knownTable) (embeddedText, bool) {
	if k.text == "" || s.peek() != '"' {
		return embeddedText{}, false
	}
	start := s.i + 1
	end := start + len(k.text)
	if end >= len(s.b) || s.b[end] != '"' || string(s.b[start:end]) != k.text {
		return embeddedText{}, false
	}
	s.i = end + 1
	return embeddedText{raw: s.b[start:end], escaped: k.escaped, set: true}, true
}

// parseEmbedded runs parse, a reader that may stop early (returning stopped),
// on e's text, unescaping first only a prefix of at least prefixBytes. The
// prefix's result stands only if the reader stopped inside it: a reader that
// stops has read complete tokens only, so the whole text would have given the
// same. A reader that needs more (or fails, which may be the cut) reads the
// whole text instead, so every outcome is that of reading the whole text. The
// text lives in bufs.escaped and stays valid until bufs is reused: later texts
// are appended, never written over.
func (bufs *decodeBuffers) parseEmbedded(e embeddedText, prefixBytes int, parse func(text []byte) (stopped bool, err error)) error {
	if !e.escaped {
		_, err := parse(e.raw) // the message's own bytes, never written to
		return err
	}
	if bufs.fullReading {
		prefixBytes = len(e.raw)
	}
	start := len(bufs.escaped)
	var n int
	var err error
	bufs.escaped, n, err = unescapeUpTo(bufs.escaped, e.raw, prefixBytes)
	if err != nil {
		return err
	}
	stopped, err := parse(bufs.escaped[start:len(bufs.escaped):len(bufs.escaped)])
	if n == len(e.raw) || (stopped && err == nil) {
		return err
	}
	if bufs.escaped, _, err = unescapeUpTo(bufs.escaped, e.raw[n:], len(e.raw)); err != nil {
		return err
	}
	_, err = parse(bufs.escaped[start:len(bufs.escaped):len(bufs.escaped)])
	return err
}

// tableCache keeps the tables the decoder parsed, by their text as it stands in
// the message. Partition events carry their table's whole object
// (≈ 1 KiB, most of it the storage descriptor before the partition keys), and a
// backlog is mostly partition events of a few tables, whose object does not
// change between them: reading it again for each event would be a fifth of the
// decoder's time. A hit needs the very same bytes, and reading a text is a pure
// function of it, so a hit gives what reading would. Only tables read without
// error are kept. One cache serves a decoder made by NewDecoder and its copies
// (a sidecar's catalog), not the pooled decode buffers: those are lost at every
// other garbage collection, which a draining sidecar runs every few fetches,
// and each decoding goroutine would warm its own. A zero Decoder has none.
//
// Bounded: texts of at most tableCacheMaxText bytes, in two generations of at
// most tableCacheEntries/2 texts and tableCacheBytes/2 bytes each. When the
// recent one is full it becomes the older one (the older one is dropped), and a
// hit in the older one moves back to the recent one: the tables in use stay,
// the versions an ALTER_TABLE replaced age out.
//
// It also keeps, for each table name an event header carries, the text last
// read for it (knownTable): the next message of that table most likely holds
// the same text, and comparing the message with it is far cheaper than
// scanning a kilobyte of escapes for the string's end, which would be half of
// the decoder's JSON scanning. Bounded: at most tableCacheEntries names of at
// most maxKnownName bytes, each referring to a text the cache holds, so they add
// no texts to its bound.
type tableCache struct {
	mu            sync.Mutex
	recent, older map[string]cachedTable
	recentBytes   int
	known         map[tableName]knownTable
}

// maxKnownName bounds the names tableCache.known keeps (database and table
// together): Hive's identifiers are at most 128 characters.
const maxKnownName = 512

// tableName is the database and table of an event's header, as the metastore
// sent them.
type tableName struct{ db, table string }

// knownTable is a table text a message held before: the whole contents of a
// JSON string, its escapes checked (see embeddedText).
type knownTable struct {
	text    string
	escaped bool
}

type cachedTable struct {
	text string // the key, to move it between generations without a copy
	t    tableObject
	// view says the view fields were read (t.IsView is known); a table read
	// only up to its partition keys serves only readers that do not ask.
	view bool
}

const (
	tableCacheEntries = 128
	tableCacheMaxText = 16 << 10
	tableCacheBytes   = 512 << 10
)

// lookup returns the table read from raw before, and makes it the known text of
// name.
func (c *tableCache) lookup(raw []byte, needView bool, name tableName) (tableObject, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hit, ok := c.recent[string(raw)]; ok && (hit.view || !needView) {
		c.knowLocked(name, hit.text)
		return hit.t, true
	}
	if hit, ok := c.older[string(raw)]; ok && (hit.view || !needView) {
		delete(c.older, hit.text)
		c.addLocked(hit, name)
		return hit.t, true
	}
	return tableObject{}, false
}

func (c *tableCache) add(e cachedTable, name tableName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(e, name)
}

func (c *tableCache) addLocked(e cachedTable, name tableName) {
	if len(e.text) > tableCacheMaxText {
		return
	}
	if _, ok := c.recent[e.text]; !ok {
		if c.recent == nil || len(c.recent) >= tableCacheEntries/2 || c.recentBytes+len(e.text) > tableCacheBytes/2 {
			c.older, c.recent, c.recentBytes = c.recent, make(map[string]cachedTable, 16), 0
			for n, k := range c.known {
				if _, ok := c.older[k.text]; !ok {
					delete(c.known, n) // its text is dropped
				}
			}
		}
		c.recentBytes += len(e.text)
	}
	c.recent[e.text] = e
	c.knowLocked(name, e.text)
}

// knowLocked makes text, a key of the recent generation, the known text of
// name. A header without a table name (a database event) knows none, and one
// with names too long for Hive none either: the map keeps the names.
func (c *tableCache) knowLocked(name tableName, text string) {
	if name.table == "" || len(name.db)+len(name.table) > maxKnownName || c.known[name].text == text {
		return
	}
	if _, ok := c.known[name]; !ok && len(c.known) >= tableCacheEntries {
		c.known = nil // many names share few texts: start over
	}
	if c.known == nil {
		c.known = make(map[tableName]knownTable, 16)
	}
	c.known[name] = knownTable{text: text, escaped: strings.IndexByte(text, '\\') >= 0}
}

// knownText returns the text last read for name ("" if none).
func (c *tableCache) knownText(name tableName) knownTable {
	if name.table == "" {
		return knownTable{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known[name]
}

// table reads the Table e holds, from the decoder's cache if these bytes were
// read before. The result's PartitionKeys may be shared with other events:
// read only.
func (bufs *decodeBuffers) table(e embeddedText, needView bool) (tableObject, error) {
	return bufs.tableFrom(bufs.tables, e, needView)
}

func (bufs *decodeBuffers) tableFrom(c *tableCache, e embeddedText, needView bool) (tableObject, error) {
	if bufs.fullReading || c == nil {
		c = &tableCache{} // read, and kept nowhere
	}
	if t, ok := c.lookup(e.raw, needView, bufs.name); ok {
		return t, nil
	}
	var t tableObject
	err := bufs.parseEmbedded(e, len(e.raw), func(text []byte) (stopped bool, err error) {
		t, stopped, err = parseTable(text, needView)
		return stopped, err
	})
	if err != nil {
		return t, err
	}
	if len(e.raw) <= tableCacheMaxText {
		c.add(cachedTable{text: string(e.raw), t: t, view: needView}, bufs.name)
	}
	return t, nil
}
