package message

import (
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzDecode checks that any event decodes to valid descriptors or to a
// *DecodeError naming the event, the same with the decoder's shortcuts as
// without, and never panics; so does DecodeTxn. Seeds: the real corpus, the
// hand-written messages of every event type (the transaction events'
// included), and their gzip forms.
func FuzzDecode(f *testing.F) {
	for _, ev := range realCorpus(f) {
		f.Add(ev.Type, ev.Format, ev.Message, ev.Catalog)
	}
	for _, c := range decodeCases() {
		f.Add(c.ev.Type, FormatJSON, c.ev.Message, c.ev.Catalog)
		f.Add(c.ev.Type, "", gzipMessage(f, c.ev.Message), c.ev.Catalog)
	}
	for _, c := range txnCases() {
		f.Add(c.ev.Type, FormatJSON, c.ev.Message, c.ev.Catalog)
		f.Add(c.ev.Type, "", gzipMessage(f, c.ev.Message), c.ev.Catalog)
	}
	// One decoder for every input, so that its table cache serves texts read
	// for earlier inputs.
	dec := NewDecoder("")
	f.Fuzz(func(t *testing.T, typ, format, message, catalog string) {
		ev := Event{ID: 42, Time: 7, Type: typ, Format: format, Message: message, Catalog: catalog}
		// The decoder's shortcuts (and its cache) must not change any outcome,
		// also under a header whose table's last text is compared with the
		// message's (the cases' tables are mostly sales.orders).
		sameDecode(t, dec, ev)
		named := ev
		named.DB, named.Table = "sales", "orders"
		sameDecode(t, dec, named)
		// A transaction event reads to a Txn or to a *DecodeError naming it.
		if _, err := dec.DecodeTxn(ev); err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.EventID != 42 {
				t.Fatalf("DecodeTxn error %v is not a *DecodeError for event 42", err)
			}
		}
		descs, err := Decoder{}.Decode(ev)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.EventID != 42 {
				t.Fatalf("error %v is not a *DecodeError for event 42", err)
			}
			if descs != nil {
				t.Fatalf("descriptors %v returned with error %v", descs, err)
			}
			// What an undecodable event is attributed to names objects an
			// FE can be told about: valid UTF-8, never empty.
			for _, o := range (Decoder{}).Attribute(named) {
				if o.DB == "" || !utf8.ValidString(o.DB) || !utf8.ValidString(o.Table) {
					t.Fatalf("attributed to %+v", o)
				}
			}
			return
		}
		for _, d := range descs {
			if d.EventID != 42 || d.UpdateTime != 7 {
				t.Fatalf("descriptor %+v does not carry the event's id and time", d)
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("invalid descriptor %+v: %v", d, err)
			}
		}
	})
}
