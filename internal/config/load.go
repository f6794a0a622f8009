package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The loader walks the YAML document against Config's fields itself (rather
// than yaml.Unmarshal) so that every error names the full key, e.g.
// `catalogs[1].poll_interval`, and so that the file, the environment and the flags
// share one parser per value type.

var durationType = reflect.TypeOf(time.Duration(0))

// loadConfigFile applies the YAML file at path to cfg.
func loadConfigFile(cfg *Config, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file: all defaults
	}
	if err := decodeNode(doc.Content[0], reflect.ValueOf(cfg).Elem(), ""); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

func decodeNode(n *yaml.Node, v reflect.Value, key string) error {
	where := func() string {
		if key == "" {
			return "the document"
		}
		return key
	}
	switch {
	case v.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s (line %d): want a mapping of keys", where(), n.Line)
		}
		fields := yamlFields(v.Type())
		var errs []error
		seen := map[string]int{} // key → line, to refuse duplicates (YAML would let the last win)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i].Value, n.Content[i+1]
			if line, dup := seen[k]; dup {
				errs = append(errs, fmt.Errorf("%s (line %d): duplicate key, already set on line %d; give each key once", joinKey(key, k), n.Content[i].Line, line))
				continue
			}
			seen[k] = n.Content[i].Line
			idx, ok := fields[k]
			if !ok {
				errs = append(errs, fmt.Errorf("%s (line %d): unknown key; allowed: %s", joinKey(key, k), n.Content[i].Line, strings.Join(sortedKeys(fields), ", ")))
				continue
			}
			if err := decodeNode(val, v.Field(idx), joinKey(key, k)); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s (line %d): want a list", key, n.Line)
		}
		out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		var errs []error
		for i, el := range n.Content {
			// Defaults first, so that a key the file sets, even to 0, keeps
			// its value and is validated (batch_size: 0 is an error, not 1000).
			if c, ok := out.Index(i).Addr().Interface().(*Catalog); ok {
				*c = CatalogDefaults("")
			}
			if err := decodeNode(el, out.Index(i), fmt.Sprintf("%s[%d]", key, i)); err != nil {
				errs = append(errs, err)
			}
		}
		v.Set(out)
		return errors.Join(errs...)
	case v.Kind() == reflect.Slice:
		switch n.Kind {
		case yaml.SequenceNode:
			vals := make([]string, 0, len(n.Content))
			for _, el := range n.Content {
				if el.Kind != yaml.ScalarNode {
					return fmt.Errorf("%s (line %d): want a list of strings", key, el.Line)
				}
				vals = append(vals, el.Value)
			}
			v.Set(reflect.ValueOf(vals))
			return nil
		case yaml.ScalarNode:
			if n.Tag == "!!null" {
				v.Set(reflect.ValueOf([]string(nil)))
				return nil
			}
			return fmt.Errorf("%s (line %d): %q: want a list, e.g. [a, b]", key, n.Line, n.Value)
		}
		return fmt.Errorf("%s (line %d): want a list of strings", key, n.Line)
	default:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s (line %d): want a single value", key, n.Line)
		}
		if n.Tag == "!!null" {
			return nil // `key:` with no value keeps the default
		}
		return setScalar(v, key, n.Value)
	}
}

// setScalar parses s into the leaf v.
func setScalar(v reflect.Value, key, s string) error {
	switch {
	case v.Type() == durationType:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%s = %q: want a duration such as 500ms, 3s or 1m", key, s)
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Int:
		i, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%s = %q: want a whole number", key, s)
		}
		v.SetInt(int64(i))
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%s = %q: want true or false", key, s)
		}
		v.SetBool(b)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		v.Set(reflect.ValueOf(SplitList(s)))
	default:
		return fmt.Errorf("%s: cannot be set from text", key)
	}
	return nil
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// applyEnv applies HMSSYNC_<KEY> variables to the scalar and list keys (the
// catalogs list comes from the file only): etcd.lease_ttl is HMSSYNC_ETCD_LEASE_TTL,
// lists are comma-separated.
func applyEnv(cfg *Config, getenv func(string) string) error {
	var errs []error
	walkLeaves(reflect.ValueOf(cfg).Elem(), "", func(v reflect.Value, key string) {
		if s := getenv(envName(key)); s != "" {
			if err := setScalar(v, key, s); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", envName(key), err))
			}
		}
	})
	return errors.Join(errs...)
}

// envName is the environment variable of a key.
func envName(key string) string {
	return "HMSSYNC_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// walkLeaves calls f for every settable leaf key outside lists of structs.
func walkLeaves(v reflect.Value, prefix string, f func(reflect.Value, string)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		key := joinKey(prefix, name)
		fv := v.Field(i)
		switch {
		case fv.Kind() == reflect.Struct:
			walkLeaves(fv, key, f)
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
		default:
			f(fv, key)
		}
	}
}

// leafKeys lists every key walkLeaves visits (for documentation checks).
func leafKeys() []string {
	var keys []string
	cfg := Default()
	walkLeaves(reflect.ValueOf(&cfg).Elem(), "", func(_ reflect.Value, key string) { keys = append(keys, key) })
	return keys
}

// setKey sets one key from text (used by the flags).
func setKey(cfg *Config, key, s string) error {
	var err error
	found := false
	walkLeaves(reflect.ValueOf(cfg).Elem(), "", func(v reflect.Value, k string) {
		if k == key {
			found = true
			err = setScalar(v, key, s)
		}
	})
	if !found {
		return fmt.Errorf("no configuration key %s", key)
	}
	return err
}

func yamlFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		m[strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]] = i
	}
	return m
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
