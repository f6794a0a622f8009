package message

import "testing"

func TestPartitionName(t *testing.T) {
	// Expected names worked out by hand from reference §4.
	cases := []struct {
		keys, values []string
		want         string
	}{
		{[]string{"day"}, []string{"2021-03-18"}, "day=2021-03-18"},
		{[]string{"y", "m"}, []string{"2024", "01"}, "y=2024/m=01"},
		{[]string{"p"}, []string{"a/b"}, "p=a%2Fb"},
		{[]string{"p"}, []string{`"#%'*/:=?\{[]^`}, "p=%22%23%25%27%2A%2F%3A%3D%3F%5C%7B%5B%5D%5E"},
		{[]string{"p"}, []string{"tab\there\x01\x7f"}, "p=tab%09here%01%7F"},
		{[]string{"p"}, []string{"统计 值"}, "p=统计 值"},
		{[]string{"p"}, []string{"}~!@$&()+,;<>|`"}, "p=}~!@$&()+,;<>|`"},
		{[]string{"p"}, []string{""}, "p=__HIVE_DEFAULT_PARTITION__"},
		{[]string{"a=b"}, []string{"x"}, "a%3Db=x"},
	}
	for _, c := range cases {
		got, err := PartitionName(c.keys, c.values)
		if err != nil {
			t.Errorf("PartitionName(%q, %q): %v", c.keys, c.values, err)
			continue
		}
		if got != c.want {
			t.Errorf("PartitionName(%q, %q) = %q, want %q", c.keys, c.values, got, c.want)
		}
	}
}

func TestPartitionNameMismatch(t *testing.T) {
	if _, err := PartitionName([]string{"a", "b"}, []string{"1"}); err == nil {
		t.Error("PartitionName with 2 keys and 1 value: no error")
	}
	if _, err := PartitionName(nil, nil); err == nil {
		t.Error("PartitionName with no keys: no error")
	}
}
