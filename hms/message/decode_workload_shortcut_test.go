package message_test

import (
	"reflect"
	"testing"

	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

// The decoder's shortcuts (a prefix of a Partition, the table cache) give what
// reading every object in full gives, on the fake metastore's workloads: the
// benchmark's mix and the default mix with renames, json-0.2 and gzip.
func TestDecodeShortcutsMatchFullReadingOnWorkloads(t *testing.T) {
	for _, mix := range []hmstest.Mix{hmstest.BenchMix, hmstest.DefaultMix} {
		srv := hmstest.NewServer()
		defer srv.Close()
		if err := hmstest.Preload(srv, 5000, mix); err != nil {
			t.Fatal(err)
		}
		d, full := message.NewDecoder(""), message.FullReading(message.Decoder{})
		decoded := 0
		for _, ev := range srv.Events() {
			want, wantErr := full.Decode(ev)
			got, err := d.Decode(ev)
			if err != nil || wantErr != nil {
				t.Fatalf("event %d (%s): %v; reading in full: %v", ev.ID, ev.Type, err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("event %d (%s): with shortcuts %+v, reading in full %+v", ev.ID, ev.Type, got, want)
			}
			decoded += len(got)
		}
		if decoded < 4000 {
			t.Fatalf("%+v: %d descriptors from 5000 events; the comparison says little", mix, decoded)
		}
	}
}
