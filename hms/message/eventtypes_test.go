package message

import (
	"slices"
	"testing"
)

func TestEventTypesAreEachListedOnceAndIncludeTheDecodedOnes(t *testing.T) {
	types := EventTypes()
	if len(types) == 0 {
		t.Fatal("EventTypes is empty: the check says nothing")
	}
	seen := map[string]bool{}
	for _, typ := range types {
		if seen[typ] {
			t.Errorf("%s is listed twice", typ)
		}
		seen[typ] = true
		if !KnownEventType(typ) {
			t.Errorf("KnownEventType(%q) = false for a listed type", typ)
		}
	}
	for typ := range decodedTypes {
		if !seen[typ] {
			t.Errorf("the decoder reads %s, which EventTypes does not list", typ)
		}
	}
	for _, typ := range []string{"", "other", "create_table", "CREATE_TABLE ", "\xff"} {
		if KnownEventType(typ) {
			t.Errorf("KnownEventType(%q) = true", typ)
		}
	}
}

func TestEventTypesIsTheCallersCopy(t *testing.T) {
	a := EventTypes()
	want := slices.Clone(a)
	a[0] = "CHANGED"
	if got := EventTypes(); !slices.Equal(got, want) {
		t.Errorf("after a caller changed its slice, EventTypes() = %q, want %q", got, want)
	}
}
