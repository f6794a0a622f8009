package message

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/hmssync/hmssync/change"
)

// The decoder takes three shortcuts: it unescapes only a prefix of a Partition
// or Database object when what it reads lies inside it, it keeps the tables it
// read by their text, and it compares a message's table with the text last
// read for the table its header names instead of scanning it. Each must give
// what reading the whole object would: these tests decode every event both ways
// (Decoder.fullReading) and compare.

// sameDecode decodes ev with the shortcuts and without, and fails unless both
// give the same descriptors or the same error.
func sameDecode(t testing.TB, d Decoder, ev Event) {
	t.Helper()
	full := d
	full.fullReading = true
	want, wantErr := full.Decode(ev)
	got, gotErr := d.Decode(ev)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("event %d (%s): with shortcuts error %v, reading in full %v", ev.ID, ev.Type, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("event %d (%s): with shortcuts %+v, reading in full %+v", ev.ID, ev.Type, got, want)
	}
}

func TestDecodeShortcutsMatchFullReadingOnTheCorpusAndCases(t *testing.T) {
	var evs []Event
	evs = append(evs, realCorpus(t)...)
	for _, c := range decodeCases() {
		evs = append(evs, c.ev)
		gz := c.ev
		gz.Message, gz.Format = gzipMessage(t, c.ev.Message), FormatGzip
		evs = append(evs, gz)
	}
	// Partitions whose values do not fit in the prefix the decoder unescapes
	// first, and a database whose name does not either: read in full.
	long := strings.Repeat("v", 3*partitionPrefixBytes)
	orders := quote(tjsonTable("sales", "orders", false, "dt", "region"))
	evs = append(evs,
		Event{ID: 900, Type: EventAlterPartition, Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":` + orders +
			`,"partitionObjBeforeJson":` + quote(tjsonPartition("sales", "orders", "2024", long)) +
			`,"partitionObjAfterJson":` + quote(tjsonPartition("sales", "orders", long, "eu")) + `}`},
		Event{ID: 901, Type: EventAddPartition, Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":` + orders +
			`,"partitionListJson":[` + quote(tjsonPartition("sales", "orders", "a"+long, "b\"\\\u00e9")) + `,` + quote(tjsonPartition("sales", "orders", "1", "2")) + `]}`},
		Event{ID: 902, Type: EventCreateDatabase, Format: FormatJSON, Message: `{"dbJson":` + quote(tjsonDatabase(strings.Repeat("d", 2*databasePrefixBytes))) + `}`},
	)
	// A view's table read first without its view fields (for its name), then
	// with them (ALTER VIEW): the cached reading must not answer the second.
	view := quote(tjsonTable("sales", "v903", true))
	evs = append(evs,
		Event{ID: 903, Type: EventInsert, Format: FormatJSON, Message: `{"tableObjJson":` + view + `,"ptnObjJson":null}`},
		Event{ID: 904, Type: EventAlterTable, Format: FormatJSON, Message: `{"db":"sales","table":"v903","tableObjBeforeJson":` + view + `,"tableObjAfterJson":` + view + `}`},
	)
	// Every embedded object cut short, and given a bad escape, at each point.
	ptn := tjsonPartition("sales", "orders", "2024-01-01", "eu")
	for cut := 0; cut <= len(ptn); cut++ {
		body := `{"db":"sales","table":"orders","tableObjJson":` + orders + `,"ptnObjJson":`
		evs = append(evs,
			Event{ID: int64(1000 + cut), Type: EventInsert, Format: FormatJSON, Message: body + quote(ptn[:cut]) + `}`},
			Event{ID: int64(2000 + cut), Type: EventInsert, Format: FormatJSON, Message: body + quote(ptn[:cut]+`\x`+ptn[cut:]) + `}`},
		)
	}
	// Every event again under a header naming sales.orders, whose known table
	// text is then a candidate for every tableObjJson; and messages holding
	// that text with more after it, cut right after it, or another table.
	named := len(evs)
	for _, ev := range evs[:named] {
		ev.ID += 10000
		ev.DB, ev.Table = "sales", "orders"
		evs = append(evs, ev)
	}
	ordersText := tjsonTable("sales", "orders", false, "dt", "region")
	body := `{"db":"sales","table":"orders","partitions":[{"dt":"1","region":"2"}],"tableObjJson":`
	for i, table := range []string{
		orders,                  // known from here on
		quote(ordersText + `X`), // the known text and more
		quote(ordersText + `\`)[:len(orders)+1] + `"`,     // an escaped quote after it
		orders[:len(orders)-1],                            // cut after the text, no closing quote
		quote(ordersText[:len(ordersText)-1]),             // a prefix of it
		quote(tjsonTable("sales", "orders", false, "dt")), // another table
		orders,
	} {
		evs = append(evs, Event{ID: int64(20000 + i), Type: EventAddPartition, Format: FormatJSON, DB: "sales", Table: "orders", Message: body + table + `}`})
	}
	d := NewDecoder("")
	for range 2 { // the second time with the tables cached
		for _, ev := range evs {
			sameDecode(t, d, ev)
		}
	}
	if k := d.tables.knownText(tableName{"sales", "orders"}); k.text == "" {
		t.Error("no table text is known for sales.orders: the comparison was never tried")
	}
}

// The decoder knows the table text last read for each header's table, and a
// message holding it again is read by comparison, not by scanning it.
func TestDecodeKnowsTheTableTextOfEachHeader(t *testing.T) {
	d := NewDecoder("")
	ordersText := quote(tjsonTable("sales", "orders", false, "dt"))
	ev := func(id int64, spec, table string) Event {
		return Event{ID: id, Type: EventAddPartition, Format: FormatJSON, DB: "sales", Table: "orders",
			Message: `{"db":"sales","table":"orders","partitions":[` + spec + `],"tableObjJson":` + table + `}`}
	}
	if _, err := d.Decode(ev(1, `{"dt":"1"}`, ordersText)); err != nil {
		t.Fatal(err)
	}
	k := d.tables.knownText(tableName{"sales", "orders"})
	if want := ordersText[1 : len(ordersText)-1]; k.text != want || !k.escaped {
		t.Fatalf("known text of sales.orders %q (escaped %v), want %q, escaped", k.text, k.escaped, want)
	}
	// Read by comparison: the scanner's cursor ends after the string and the
	// contents are the message's own bytes.
	msg := []byte(`{"tableObjJson":` + ordersText + `,"x":1}`)
	s := jsonScanner{b: msg, i: len(`{"tableObjJson":`)}
	got, ok := knownString(&s, k)
	if !ok || string(got.raw) != k.text || !got.escaped || !got.set || s.i != len(msg)-len(`,"x":1}`) {
		t.Fatalf("knownString gave %q, %v, cursor %d", got.raw, ok, s.i)
	}
	if &got.raw[0] != &msg[len(`{"tableObjJson":`)+1] {
		t.Error("knownString's contents are not the message's bytes")
	}
	// Another table text under the same header is read as itself (its keys
	// name the partition), and is known from then on.
	other := quote(tjsonTable("sales", "orders", false, "dt", "region"))
	descs, err := d.Decode(ev(2, `{"region":"eu","dt":"1"}`, other))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"dt=1/region=eu"}; len(descs) != 1 || !reflect.DeepEqual(descs[0].Partitions, want) {
		t.Fatalf("decoded %+v, want the partitions %q", descs, want)
	}
	if k := d.tables.knownText(tableName{"sales", "orders"}); k.text != other[1:len(other)-1] {
		t.Fatalf("after another table text the known one is %q", k.text)
	}
}

// The shortcuts are taken: a Partition's storage descriptor is not unescaped,
// and a table read before is not read again.
func TestDecodeUnescapesOnlyWhatItReads(t *testing.T) {
	pad := strings.Repeat(`{\"1\":{\"str\":\"a\"}},`, 200) // ≈ 4 KiB of a storage descriptor, escaped
	ptn := `{"1":{"lst":["str",1,"2024"]},"2":{"str":"sales"},"3":{"str":"orders"},"6":{"lst":["rec",201,` + pad + `{}]}}`
	table := tjsonTable("sales", "orders", false, "dt")
	ev := Event{ID: 1, Type: EventAlterPartition, Format: FormatJSON, Message: `{"db":"sales","table":"orders","tableObjJson":` + quote(table) +
		`,"partitionObjBeforeJson":` + quote(ptn) + `,"partitionObjAfterJson":` + quote(ptn) + `}`}

	bufs := getDecodeBuffers()
	defer putDecodeBuffers(bufs)
	bufs.tables = &tableCache{} // as NewDecoder's Decode sets it
	decode := func() []change.Descriptor {
		t.Helper()
		bufs.escaped = bufs.escaped[:0]
		bufs.fields.reset()
		text, err := bufs.messageText(ev)
		if err != nil {
			t.Fatal(err)
		}
		m := &bufs.fields
		budget := newNameBudget(len(text))
		if err := m.scan(text, &budget, ev, knownTable{}); err != nil {
			t.Fatal(err)
		}
		ed := eventDecoder{e: ev, m: m, bufs: bufs, names: &budget}
		descs, err := ed.decode()
		if err != nil {
			t.Fatal(err)
		}
		return descs
	}
	first := decode()
	if want := []string{"dt=2024"}; len(first) != 1 || !reflect.DeepEqual(first[0].Partitions, want) {
		t.Fatalf("decoded %+v, want one refresh of %q", first, want)
	}
	// The table in full and a prefix of each partition.
	if max := len(table) + 2*(partitionPrefixBytes+8); len(bufs.escaped) > max {
		t.Errorf("unescaped %d bytes, want at most %d: the table and %d-byte prefixes of the partitions (each %d bytes)", len(bufs.escaped), max, partitionPrefixBytes, len(ptn))
	}
	again := decode()
	if !reflect.DeepEqual(again, first) {
		t.Fatalf("decoded %+v the second time, %+v the first", again, first)
	}
	if max := 2 * (partitionPrefixBytes + 8); len(bufs.escaped) > max {
		t.Errorf("unescaped %d bytes the second time, want at most %d: the table is cached", len(bufs.escaped), max)
	}
}

// The table cache stays within its bounds however many tables it sees, and
// keeps a table in use while others pass through.
func TestDecodeTableCacheIsBounded(t *testing.T) {
	bufs, c := &decodeBuffers{}, &tableCache{}
	inUse := []byte(tjsonTable("sales", "orders", false, "dt"))
	if _, err := bufs.tableFrom(c, embeddedText{raw: inUse, set: true}, false); err != nil {
		t.Fatal(err)
	}
	for i := range 5 * tableCacheEntries {
		if _, ok := c.lookup(inUse, false, tableName{"sales", "orders"}); !ok {
			t.Fatalf("after %d other tables the table in use is no longer cached", i)
		}
		name := strings.Repeat("x", i%(2*tableCacheBytes/tableCacheEntries)) + strings.Repeat("t", 1+i)
		if i%10 == 0 {
			name += strings.Repeat("y", tableCacheMaxText) // too long to keep
		}
		raw := []byte(tjsonTable("sales", name, false, "dt"))
		bufs.name = tableName{"sales", name}
		if _, err := bufs.tableFrom(c, embeddedText{raw: raw, set: true}, false); err != nil {
			t.Fatal(err)
		}
		// The known texts are texts the cache holds: they add none.
		if len(c.known) > tableCacheEntries {
			t.Fatalf("after %d tables the cache knows the texts of %d names, bound %d", i+1, len(c.known), tableCacheEntries)
		}
		for n, k := range c.known {
			_, recent := c.recent[k.text]
			_, older := c.older[k.text]
			if !recent && !older {
				t.Fatalf("after %d tables the known text of %v is not in the cache", i+1, n)
			}
		}
		texts, bytes := len(c.recent)+len(c.older), 0
		for _, g := range []map[string]cachedTable{c.recent, c.older} {
			for k := range g {
				bytes += len(k)
				if len(k) > tableCacheMaxText {
					t.Fatalf("the cache holds a %d-byte text, bound %d", len(k), tableCacheMaxText)
				}
			}
		}
		if texts > tableCacheEntries || bytes > tableCacheBytes {
			t.Fatalf("after %d tables the cache holds %d texts of %d bytes; bound %d texts, %d bytes", i+1, texts, bytes, tableCacheEntries, tableCacheBytes)
		}
	}
	// A table that fails to read is not kept.
	bad := []byte(`{"1":{"str":"t"},"8":{"lst":["rec",2]}}`)
	if _, err := bufs.tableFrom(c, embeddedText{raw: bad, set: true}, false); err == nil {
		t.Fatal("a list declaring 2 elements and holding none was read without error")
	}
	if _, ok := c.lookup(bad, false, tableName{}); ok {
		t.Fatal("a table that failed to read was cached")
	}
}

// The known texts stay within their bound however many header names share a
// table text, and a name too long for Hive is not kept.
func TestDecodeKnownTextsAreBounded(t *testing.T) {
	bufs, c := &decodeBuffers{}, &tableCache{}
	raw := []byte(tjsonTable("sales", "orders", false, "dt"))
	for i := range 10 * tableCacheEntries {
		bufs.name = tableName{"sales", fmt.Sprint("orders", i)}
		if _, err := bufs.tableFrom(c, embeddedText{raw: raw, set: true}, false); err != nil {
			t.Fatal(err)
		}
		if len(c.known) > tableCacheEntries {
			t.Fatalf("after %d names the cache knows %d, bound %d", i+1, len(c.known), tableCacheEntries)
		}
	}
	long := tableName{"sales", strings.Repeat("t", maxKnownName)}
	bufs.name = long
	if _, err := bufs.tableFrom(c, embeddedText{raw: raw, set: true}, false); err != nil {
		t.Fatal(err)
	}
	if k := c.knownText(long); k.text != "" {
		t.Fatalf("a %d-byte name was kept", len(long.db)+len(long.table))
	}
	if k := c.knownText(tableName{"sales", fmt.Sprint("orders", 10*tableCacheEntries-1)}); k.text != string(raw) {
		t.Fatal("the last name read is not known")
	}
}

// A message's db and table that are the event header's are not copied: the
// descriptor names them with the header's strings.
func TestDecodeTakesDBAndTableFromTheHeaderWhenTheyAreTheSame(t *testing.T) {
	ev := Event{ID: 1, Type: EventCreateTable, Format: FormatJSON, DB: "sales", Table: "orders", Message: `{"db":"sales","table":"orders"}`}
	descs, err := NewDecoder("").Decode(ev)
	if err != nil || len(descs) != 1 {
		t.Fatalf("decoded %+v, %v", descs, err)
	}
	if unsafe.StringData(descs[0].DB) != unsafe.StringData(ev.DB) || unsafe.StringData(descs[0].Table) != unsafe.StringData(ev.Table) {
		t.Error("the descriptor's db and table are copies of the header's")
	}
	// Names that differ from the header's are the message's.
	ev.DB, ev.Table = "other", "orders2"
	descs, err = NewDecoder("").Decode(ev)
	if err != nil || len(descs) != 1 || descs[0].DB != "sales" || descs[0].Table != "orders" {
		t.Fatalf("decoded %+v, %v; want sales.orders, the message's", descs, err)
	}
}
