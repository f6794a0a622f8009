package message

import (
	"errors"
	"fmt"
)

// Hive embeds Table, Partition and Database objects in its messages as strings in
// Thrift's TJSONProtocol: an object keyed by field id whose values are one-member
// objects naming the type, e.g. {"1":{"str":"t"},"8":{"lst":["rec",1,{...}]}}.
// These readers pick out the fields hmssync needs (reference §3) and skip the rest.

// tableObject is what the decoder needs of a Thrift Table.
type tableObject struct {
	Name, DB      string   // fields 1, 2
	PartitionKeys []string // field 8, the names of the FieldSchemas in order
	IsView        bool     // field 10 (viewOriginalText) or 11 (viewExpandedText) set
}

// partitionObject is what the decoder needs of a Thrift Partition: its values
// (field 1). Fields 2 and 3 (db, table) are read, to check them and to know
// where to stop, but not kept.
type partitionObject struct {
	// Values may be views of the text read (jsonScanner.strView): valid only
	// as long as the text, which is enough to name the partition.
	Values []string
}

// parseTable reads a Table. Thrift writes fields in id order, so reading stops
// after field 8 unless the view fields are needed, and after field 11 otherwise;
// stopped says it did.
func parseTable(text []byte, needView bool) (t tableObject, stopped bool, err error) {
	s := jsonScanner{b: text}
	err = s.object(func(key []byte) error {
		if len(key) == 2 && key[0] >= '1' && (key[0] > '1' || key[1] > '1') {
			return errStop // field 12 or later
		}
		var err error
		switch string(key) {
		case "1":
			t.Name, err = tjsonString(&s)
		case "2":
			t.DB, err = tjsonString(&s)
		case "8":
			t.PartitionKeys = t.PartitionKeys[:0]
			err = tjsonList(&s, func() error {
				name, err := fieldSchemaName(&s)
				t.PartitionKeys = append(t.PartitionKeys, name)
				return err
			})
			if err == nil && !needView {
				err = errStop
			}
		case "10", "11":
			t.IsView = true
			err = s.skip()
		default:
			err = s.skip()
		}
		if err != nil && err != errStop {
			return fmt.Errorf("table field %s: %w", key, err)
		}
		return err
	})
	stopped, err = endObject(&s, err)
	return t, stopped, err
}

func fieldSchemaName(s *jsonScanner) (string, error) {
	var name string
	seen := false
	err := s.object(func(key []byte) error {
		if string(key) == "1" {
			var err error
			name, err = tjsonString(s)
			seen = true
			return err
		}
		return s.skip()
	})
	if err == nil && !seen {
		err = fmt.Errorf("field schema without a name (field 1)")
	}
	return name, err
}

// parsePartition reads a Partition's values, db and table; stopped says it
// stopped there, not reading the rest. The values are appended to values[:0].
func parsePartition(text []byte, values []string) (p partitionObject, stopped bool, err error) {
	p.Values = values[:0]
	seen := false
	s := jsonScanner{b: text}
	err = s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "1":
			seen = true
			err = tjsonList(&s, func() error {
				v, err := s.strView()
				p.Values = append(p.Values, v)
				return err
			})
		case "2":
			err = tjsonStringChecked(&s)
		case "3":
			err = tjsonStringChecked(&s)
			if err == nil && seen {
				err = errStop // the rest (storage descriptor, parameters) is not needed
			}
		default:
			err = s.skip()
		}
		if err != nil && err != errStop {
			return fmt.Errorf("partition field %s: %w", key, err)
		}
		return err
	})
	stopped, err = endObject(&s, err)
	if err == nil && !seen {
		err = fmt.Errorf("partition without values (field 1)")
	}
	return p, stopped, err
}

// parseDatabaseName returns field 1 (name) of a Thrift Database; stopped says it
// stopped there.
func parseDatabaseName(text []byte) (name string, stopped bool, err error) {
	s := jsonScanner{b: text}
	err = s.object(func(key []byte) error {
		if string(key) == "1" {
			var err error
			name, err = tjsonString(&s)
			if err != nil {
				return fmt.Errorf("database field 1: %w", err)
			}
			return errStop
		}
		return s.skip()
	})
	stopped, err = endObject(&s, err)
	if err == nil && name == "" {
		err = fmt.Errorf("database without a name (field 1)")
	}
	return name, stopped, err
}

// endObject completes the reading of a top-level object: a reader that stopped
// early has succeeded (stopped), one that read it all must be at the end of the
// text.
func endObject(s *jsonScanner, err error) (stopped bool, _ error) {
	if errors.Is(err, errStop) {
		return true, nil
	}
	if err == nil {
		err = s.end()
	}
	return false, err
}

// tjsonString reads {"str":"..."}.
func tjsonString(s *jsonScanner) (string, error) {
	var v string
	err := tjsonValue(s, "str", func() error {
		var err error
		v, _, err = s.str()
		return err
	})
	return v, err
}

// tjsonStringChecked reads {"str":"..."} as tjsonString does, keeping nothing.
func tjsonStringChecked(s *jsonScanner) error {
	return tjsonValue(s, "str", func() error {
		_, err := s.strView()
		return err
	})
}

// tjsonList reads {"lst":[elemType,count,e1,e2,...]} and calls elem, which must
// consume one element, count times.
func tjsonList(s *jsonScanner, elem func() error) error {
	return tjsonValue(s, "lst", func() error {
		var count int64
		n := 0
		err := s.array(func(i int) error {
			switch i {
			case 0:
				return s.skip() // element type
			case 1:
				var err error
				count, err = s.int()
				return err
			}
			n++
			return elem()
		})
		if err == nil && int64(n) != count {
			err = fmt.Errorf("list declares %d elements, has %d", count, n)
		}
		return err
	})
}

// tjsonValue reads the one-member object {"<typ>": value}, calling read for the value.
func tjsonValue(s *jsonScanner, typ string, read func() error) error {
	members := 0
	err := s.object(func(key []byte) error {
		members++
		if string(key) != typ {
			return fmt.Errorf("want a %q value, found %q", typ, key)
		}
		return read()
	})
	if err == nil && members != 1 {
		err = fmt.Errorf("want one %q value, found %d members", typ, members)
	}
	return err
}
