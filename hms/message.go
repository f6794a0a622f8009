package hms

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

// maxMessageSize bounds a decompressed message so that a corrupt or hostile gzip
// stream cannot exhaust memory. Hive's largest messages (thousands of partitions
// with their objects) are tens of megabytes.
const maxMessageSize = 256 << 20

// decodeBuffers are the scratch buffers of one Decode call, pooled because a
// gzip reader and the buffers for a message cost more to allocate than decoding a
// small message does.
type decodeBuffers struct {
	b64     []byte
	text    bytes.Buffer
	gz      *gzip.Reader
	escaped []byte // unescaped embedded objects of the current message
	rd      bytes.Reader
}

var decodeBufferPool = sync.Pool{New: func() any { return new(decodeBuffers) }}

func getDecodeBuffers() *decodeBuffers {
	bufs := decodeBufferPool.Get().(*decodeBuffers)
	bufs.escaped = bufs.escaped[:0]
	return bufs
}

// maxPooledBuffer keeps the buffers of an exceptionally large message from being
// held by the pool for ever.
const maxPooledBuffer = 8 << 20

func putDecodeBuffers(bufs *decodeBuffers) {
	if cap(bufs.escaped) > maxPooledBuffer || cap(bufs.b64) > maxPooledBuffer || bufs.text.Cap() > maxPooledBuffer {
		return
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
	n, err = base64.StdEncoding.Decode(bufs.b64[:n], []byte(e.Message))
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
	bufs.text.Reset()
	m, err := bufs.text.ReadFrom(io.LimitReader(bufs.gz, maxMessageSize+1))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("truncated gzip stream")
		}
		return nil, fmt.Errorf("message is not valid gzip: %w", err)
	}
	if m > maxMessageSize {
		return nil, fmt.Errorf("message decompresses to more than %d bytes", maxMessageSize)
	}
	return bufs.text.Bytes(), nil
}

// embeddedString reads a JSON string holding an embedded object and returns its
// unescaped text, nil for null. The text lives in bufs.escaped and stays valid
// until bufs is reused: later strings are appended, never written over.
func (bufs *decodeBuffers) embeddedString(s *jsonScanner) ([]byte, error) {
	if s.null() {
		return nil, nil
	}
	if s.peek() != '"' {
		return nil, s.syntax("want a string")
	}
	start := len(bufs.escaped)
	var err error
	bufs.escaped, err = s.appendString(bufs.escaped)
	return bufs.escaped[start:len(bufs.escaped):len(bufs.escaped)], err
}
