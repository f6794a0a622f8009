package message

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hmssync/hmssync/change"
)

// normaliseIdentifier returns a database or table name as HMS stores it. Hive
// lower-cases identifiers when it stores them, but some messages carry the name as
// the client spelled it: Hive 3.1 logs CREATE_TABLE with the client's Table object,
// so a table created as "MixedCase" is registered as "MixedCase" and dropped as
// "mixedcase". strings.ToLower returns its argument unchanged (no allocation) when
// it is already lower-case ASCII, the usual case.
func normaliseIdentifier(name string) string {
	return strings.ToLower(name)
}

func normaliseNames(d *change.Descriptor) {
	d.DB = normaliseIdentifier(d.DB)
	d.Table = normaliseIdentifier(d.Table)
	d.DBAfter = normaliseIdentifier(d.DBAfter)
	d.TableAfter = normaliseIdentifier(d.TableAfter)
}

// checkUTF8Names refuses a descriptor naming an object with bytes that are not
// UTF-8. An FE cannot be told about such an object (its name would arrive
// altered, the FE would answer "does not exist" and the real object would stay
// stale), so the event must take the self-heal path: a full refresh.
func checkUTF8Names(d *change.Descriptor) error {
	for _, n := range []struct{ what, name string }{{"db", d.DB}, {"table", d.Table}, {"db_after", d.DBAfter}, {"table_after", d.TableAfter}} {
		if !utf8.ValidString(n.name) {
			return fmt.Errorf("%s %q is not valid UTF-8", n.what, n.name)
		}
	}
	for i, p := range d.Partitions {
		if !utf8.ValidString(p) {
			return fmt.Errorf("partition %d %q is not valid UTF-8", i, p)
		}
	}
	return nil
}
