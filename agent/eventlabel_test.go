package agent

import (
	"testing"

	"github.com/hmssync/hmssync/hms/message"
)

func TestEventTypeLabelKeepsHivesTypesAndCallsTheRestOther(t *testing.T) {
	types := message.EventTypes()
	if len(types) == 0 {
		t.Fatal("message.EventTypes is empty: the check says nothing")
	}
	for _, typ := range types {
		if got := eventTypeLabel(typ); got != typ {
			t.Errorf("eventTypeLabel(%q) = %q, want the type itself", typ, got)
		}
	}
	for _, typ := range []string{"", "\xff", "ALTER_TABLE\xc3", "MADE_UP_1", "alter_table"} {
		if got := eventTypeLabel(typ); got != "other" {
			t.Errorf("eventTypeLabel(%q) = %q, want other", typ, got)
		}
	}
}
