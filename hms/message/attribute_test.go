package message

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"slices"
	"testing"

	"github.com/hmssync/hmssync/change"
)

func gzipped(t *testing.T, text string, cut int) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(text))
	w.Close()
	raw := b.Bytes()
	if cut > 0 {
		raw = raw[:len(raw)-cut]
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// An undecodable event is attributed to the objects an operator would name: its
// header's table; for ALTER_TABLE also the table before it, read from the
// message as far as it goes; its database when that old name cannot be read;
// nothing when the header names nothing an FE could be told about.
func TestAttributeNamesWhatThePoisonConcerns(t *testing.T) {
	const renameHead = `{"server":"","servicePrincipal":"","db":"Sales","table":"Orders_Old","tableType":"EXTERNAL_TABLE","tableObjBeforeJson":"{\"1`
	for _, tc := range []struct {
		name string
		ev   Event
		want []change.Object
	}{
		{"a partition event: its table", Event{Type: EventAlterPartition, DB: "Sales", Table: "Orders", Message: "{not json", Format: FormatJSON}, []change.Object{{DB: "sales", Table: "orders"}}},
		{"a corrupt gzip insert: its table", Event{Type: EventInsert, DB: "sales", Table: "orders", Message: "H4sI!!", Format: FormatGzip}, []change.Object{{DB: "sales", Table: "orders"}}},
		{"a rename cut short: both names", Event{Type: EventAlterTable, DB: "sales", Table: "orders", Message: renameHead, Format: FormatJSON},
			[]change.Object{{DB: "sales", Table: "orders"}, {DB: "sales", Table: "orders_old"}}},
		{"a gzip rename without its objects: both names", Event{Type: EventAlterTable, DB: "sales", Table: "orders", Message: gzipped(t, renameHead+`xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, 0), Format: FormatGzip},
			[]change.Object{{DB: "sales", Table: "orders"}, {DB: "sales", Table: "orders_old"}}},
		{"an ALTER_TABLE whose old name is unreadable: its database", Event{Type: EventAlterTable, DB: "sales", Table: "orders", Message: "{not json", Format: FormatJSON}, []change.Object{{DB: "sales"}}},
		{"a database event: its database", Event{Type: EventCreateDatabase, DB: "sales", Message: "{", Format: FormatJSON}, []change.Object{{DB: "sales"}}},
		{"a table event without a table: its database", Event{Type: EventDropTable, DB: "sales", Message: "{", Format: FormatJSON}, []change.Object{{DB: "sales"}}},
		{"no header: nothing", Event{Type: EventAlterPartition, Message: "{", Format: FormatJSON}, nil},
		{"Hive 3's \"null\" database: nothing", Event{Type: EventInsert, DB: "null", Table: " ", Message: "{", Format: FormatJSON}, nil},
		{"a name that is not UTF-8: nothing", Event{Type: EventAlterPartition, DB: "s\xffx", Table: "t", Message: "{", Format: FormatJSON}, nil},
		{"ALTER_DATABASE, whose new name the header lacks: nothing", Event{Type: EventAlterDatabase, DB: "sales", Message: "{", Format: FormatJSON}, nil},
		{"an event the decoder does not decode: nothing", Event{Type: "OPEN_TXN", DB: "sales", Table: "t"}, nil},
	} {
		if got := (Decoder{}).Attribute(tc.ev); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
