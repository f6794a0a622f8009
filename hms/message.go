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
	if cap(bufs.escaped) > maxPooledBuffer || cap(bufs.b64) > maxPooledBuffer || cap(bufs.text) > maxPooledBuffer {
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
