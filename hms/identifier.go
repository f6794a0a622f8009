package hms

import (
	"strings"

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
