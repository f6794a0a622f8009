package hmstest_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/hmssync/hmssync/change"
	"github.com/hmssync/hmssync/hms/hmstest"
	"github.com/hmssync/hmssync/hms/message"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMutationsWriteHiveEvents drives every mutation and checks both the truth
// (Snapshot) and what a consumer decodes from the log, in both encodings; the
// expected values are worked out by hand.
func TestMutationsWriteHiveEvents(t *testing.T) {
	for _, format := range []hmstest.Format{hmstest.FormatJSON, hmstest.FormatGzip, hmstest.FormatMixed} {
		s := hmstest.NewServer(hmstest.WithFormat(format))
		must(t, s.CreateDatabase("sales"))
		must(t, s.CreateDatabase("archive"))
		must(t, s.CreateTable(hmstest.Table{DB: "sales", Name: "orders", PartitionKeys: []string{"dt", "region"}}))
		must(t, s.CreateTable(hmstest.Table{DB: "sales", Name: "dim"}))
		must(t, s.CreateTable(hmstest.Table{DB: "sales", Name: "v", ViewText: "select * from dim"}))
		must(t, s.AddPartitions("sales", "orders", []string{"2024-01-01", "eu"}, []string{"2024-01-02", "us/west"}))
		must(t, s.AlterPartition("sales", "orders", []string{"2024-01-01", "eu"}, []string{"2024-01-01", "eu"}))
		must(t, s.AlterPartition("sales", "orders", []string{"2024-01-01", "eu"}, []string{"2024-01-01", "eu-1"}))
		must(t, s.AlterPartitions("sales", "orders", []string{"2024-01-02", "us/west"}))
		must(t, s.Insert("sales", "orders", []string{"2024-01-02", "us/west"}))
		must(t, s.Insert("sales", "dim", nil))
		must(t, s.AlterTable("sales", "dim"))
		must(t, s.AlterTable("sales", "v"))
		must(t, s.DropPartitions("sales", "orders", []string{"2024-01-02", "us/west"}))
		must(t, s.RenameTable("sales", "dim", "archive", "dim_old"))
		txn, err := s.OpenTxn()
		must(t, err)
		must(t, s.CommitTxn(txn, false))
		must(t, s.UpdateTableColumnStats("sales", "orders"))
		must(t, s.CreateDatabase("tmp"))
		must(t, s.CreateTable(hmstest.Table{DB: "tmp", Name: "x"}))
		must(t, s.DropDatabase("tmp"))
		must(t, s.RenameDatabase("archive", "archive2"))

		wantSnap := map[string]map[string][]string{
			"sales":    {"orders": {"dt=2024-01-01/region=eu-1"}, "v": {}},
			"archive2": {"dim_old": {}},
		}
		if got := s.Snapshot(); !reflect.DeepEqual(got, wantSnap) {
			t.Errorf("format %d: Snapshot = %v, want %v", format, got, wantSnap)
		}
		type op struct {
			Op                       change.Op
			DB, Table, DBAfter, TAft string
			Parts                    []string
		}
		want := []op{
			{Op: change.RegisterDatabase, DB: "sales"},
			{Op: change.RegisterDatabase, DB: "archive"},
			{Op: change.RegisterTable, DB: "sales", Table: "orders"},
			{Op: change.RegisterTable, DB: "sales", Table: "dim"},
			{Op: change.RegisterTable, DB: "sales", Table: "v"},
			{Op: change.AddPartitions, DB: "sales", Table: "orders", Parts: []string{"dt=2024-01-01/region=eu", "dt=2024-01-02/region=us%2Fwest"}},
			{Op: change.RefreshPartitions, DB: "sales", Table: "orders", Parts: []string{"dt=2024-01-01/region=eu"}},
			{Op: change.DropPartitions, DB: "sales", Table: "orders", Parts: []string{"dt=2024-01-01/region=eu"}},
			{Op: change.AddPartitions, DB: "sales", Table: "orders", Parts: []string{"dt=2024-01-01/region=eu-1"}},
			{Op: change.RefreshPartitions, DB: "sales", Table: "orders", Parts: []string{"dt=2024-01-02/region=us%2Fwest"}},
			{Op: change.RefreshPartitions, DB: "sales", Table: "orders", Parts: []string{"dt=2024-01-02/region=us%2Fwest"}},
			{Op: change.RefreshTable, DB: "sales", Table: "dim"},
			{Op: change.RefreshTable, DB: "sales", Table: "dim"},
			{Op: change.RenameTable, DB: "sales", Table: "v", DBAfter: "sales", TAft: "v"},
			{Op: change.DropPartitions, DB: "sales", Table: "orders", Parts: []string{"dt=2024-01-02/region=us%2Fwest"}},
			{Op: change.RenameTable, DB: "sales", Table: "dim", DBAfter: "archive", TAft: "dim_old"},
			{Op: change.RegisterDatabase, DB: "tmp"},
			{Op: change.RegisterTable, DB: "tmp", Table: "x"},
			{Op: change.UnregisterTable, DB: "tmp", Table: "x"},
			{Op: change.UnregisterDatabase, DB: "tmp"},
			{Op: change.RenameDatabase, DB: "archive", DBAfter: "archive2"},
		}
		var got []op
		evs := s.Events()
		if len(evs) != 23 {
			t.Errorf("format %d: %d events, want 23", format, len(evs))
		}
		formats := map[string]bool{}
		for _, e := range evs {
			formats[e.Format] = true
			ds, err := message.Decoder{}.Decode(e)
			if err != nil {
				t.Fatalf("format %d: %v", format, err)
			}
			for _, d := range ds {
				got = append(got, op{d.Op, d.DB, d.Table, d.DBAfter, d.TableAfter, d.Partitions})
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("format %d: decoded\n%v\nwant\n%v", format, got, want)
		}
		wantFormats := map[hmstest.Format]map[string]bool{
			hmstest.FormatJSON:  {message.FormatJSON: true},
			hmstest.FormatGzip:  {message.FormatGzip: true},
			hmstest.FormatMixed: {message.FormatJSON: true, message.FormatGzip: true},
		}[format]
		if !reflect.DeepEqual(formats, wantFormats) {
			t.Errorf("format %d: message formats %v, want %v", format, formats, wantFormats)
		}
		s.Close()
	}
}

func TestMutationErrors(t *testing.T) {
	s := hmstest.NewServer()
	defer s.Close()
	must(t, s.CreateDatabase("d"))
	must(t, s.CreateTable(hmstest.Table{DB: "d", Name: "t", PartitionKeys: []string{"p"}}))
	must(t, s.AddPartitions("d", "t", []string{"1"}))
	before := s.CurrentEventID()
	checks := []struct {
		err  error
		want error
	}{
		{s.CreateDatabase("d"), hmstest.ErrExists},
		{s.CreateTable(hmstest.Table{DB: "nope", Name: "t"}), hmstest.ErrNotFound},
		{s.AddPartitions("d", "t", []string{"1"}), hmstest.ErrExists},
		{s.DropPartitions("d", "t", []string{"2"}), hmstest.ErrNotFound},
		{s.RenameTable("d", "missing", "d", "x"), hmstest.ErrNotFound},
	}
	for i, c := range checks {
		if !errors.Is(c.err, c.want) {
			t.Errorf("check %d: error %v, want %v", i, c.err, c.want)
		}
	}
	if err := s.AddPartitions("d", "t", []string{"1", "2"}); err == nil {
		t.Error("AddPartitions with 2 values for 1 key: no error")
	}
	if s.CurrentEventID() != before {
		t.Errorf("failed mutations appended events: current id %d, want %d", s.CurrentEventID(), before)
	}
}
