package fetest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Catalog is a catalog the fake FE declares, as Doris's SHOW CATALOGS and SHOW
// CREATE CATALOG show it. Options.Catalogs lists them; preflight checks read them.
type Catalog struct {
	Name string
	// Properties are the catalog's properties; "type" is its kind ("hms" for a
	// Hive catalog). Empty: {"type": "hms"}.
	Properties map[string]string
}

// catalogType is a declared catalog's type.
func (c Catalog) catalogType() string {
	if t, ok := c.Properties["type"]; ok {
		return t
	}
	return "hms"
}

// showStatement recognises the two SHOW statements the fake answers:
// SHOW CATALOGS, and SHOW CREATE CATALOG <name>.
func showStatement(sql string) (create bool, name string, ok bool) {
	toks, err := lex(sql)
	if err != nil {
		return false, "", false
	}
	words := make([]token, 0, len(toks))
	for _, t := range toks {
		if t.kind == tokEOF || t.kind == tokPunct && t.text == ";" {
			break
		}
		words = append(words, t)
	}
	kw := func(i int, w string) bool {
		return i < len(words) && words[i].kind == tokWord && strings.EqualFold(words[i].text, w)
	}
	switch {
	case len(words) == 2 && kw(0, "SHOW") && kw(1, "CATALOGS"):
		return false, "", true
	case len(words) == 4 && kw(0, "SHOW") && kw(1, "CREATE") && kw(2, "CATALOG") &&
		(words[3].kind == tokWord || words[3].kind == tokQuoted):
		return true, words[3].text, true
	}
	return false, "", false
}

// answerShow answers SHOW CATALOGS (the internal catalog and the declared ones)
// and SHOW CREATE CATALOG in Doris's result-set form. It reports whether the
// statement was one of them.
func (s *Server) answerShow(w http.ResponseWriter, stmt string) bool {
	create, name, ok := showStatement(stmt)
	if !ok {
		return false
	}
	if !create {
		rows := [][]string{{"0", "internal", "internal", "yes", "", "", "Doris internal catalog"}}
		for i, c := range s.catalogs {
			rows = append(rows, []string{fmt.Sprint(10000 + i), c.Name, c.catalogType(), "", "2024-06-01 10:00:00", "2024-06-01 10:00:00", ""})
		}
		writeResultSet(w, []string{"CatalogId", "CatalogName", "Type", "IsCurrent", "CreateTime", "LastUpdateTime", "Comment"}, rows)
		return true
	}
	for _, c := range s.catalogs {
		if c.Name != name {
			continue
		}
		props := map[string]string{"type": c.catalogType()}
		for k, v := range c.Properties {
			props[k] = v
		}
		s.m.mu.Lock()
		for k, v := range s.m.altered[c.Name] {
			props[k] = v
		}
		s.m.mu.Unlock()
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		lines := make([]string, len(keys))
		for i, k := range keys {
			lines[i] = fmt.Sprintf("%q = %q", k, props[k])
		}
		ddl := fmt.Sprintf("\nCREATE CATALOG `%s` PROPERTIES (\n%s\n);", strings.ReplaceAll(c.Name, "`", "``"), strings.Join(lines, ",\n"))
		writeResultSet(w, []string{"Catalog", "CreateCatalog"}, [][]string{{c.Name, ddl}})
		return true
	}
	writeEnvelope(w, 1, fmt.Sprintf("Failed to execute sql: errCode = 2, detailMessage = Unknown catalog '%s'", name))
	return true
}

// declared reports whether the catalog is declared, or true when none are (a
// fake without Options.Catalogs has every catalog).
func (s *Server) declared(catalog string) bool {
	if s.catalogs == nil {
		return true
	}
	for _, c := range s.catalogs {
		if c.Name == catalog {
			return true
		}
	}
	return false
}

func writeResultSet(w http.ResponseWriter, columns []string, rows [][]string) {
	meta := make([]map[string]string, len(columns))
	for i, c := range columns {
		meta[i] = map[string]string{"name": c, "type": "CHAR"}
	}
	if rows == nil {
		rows = [][]string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"msg": "success", "code": 0, "count": 0,
		"data": map[string]any{"type": "result_set", "meta": meta, "data": rows, "time": 0}})
}

// alterStatement recognises ALTER CATALOG <name> SET PROPERTIES ("k" = "v", ...):
// ok is false for any other statement, err says what is wrong with one that
// starts so.
func alterStatement(sql string) (name string, props map[string]string, ok bool, err error) {
	toks, lerr := lex(sql)
	if lerr != nil {
		return "", nil, false, nil
	}
	p := &parser{toks: toks}
	if !p.keyword("ALTER") || !p.keyword("CATALOG") {
		return "", nil, false, nil
	}
	t := p.next()
	if t.kind != tokWord && t.kind != tokQuoted {
		return "", nil, true, fmt.Errorf("mismatched input %s at position %d, expecting a catalog name", t, t.pos)
	}
	name = t.text
	if !p.keyword("SET") || !p.keyword("PROPERTIES") {
		return name, nil, true, fmt.Errorf("this FE only answers ALTER CATALOG %s SET PROPERTIES (...)", name)
	}
	if err := p.expect(tokPunct, "(", "'('"); err != nil {
		return name, nil, true, err
	}
	props = map[string]string{}
	for {
		k, eq, v := p.next(), p.next(), p.next()
		if k.kind != tokString || eq.kind != tokPunct || eq.text != "=" || v.kind != tokString {
			return name, nil, true, fmt.Errorf("mismatched input at position %d, expecting \"name\" = \"value\"", k.pos)
		}
		props[k.text] = v.text
		switch sep := p.next(); {
		case sep.kind == tokPunct && sep.text == ")":
			if n := p.peek(); n.kind == tokPunct && n.text == ";" {
				p.next()
			}
			if n := p.peek(); n.kind != tokEOF {
				return name, nil, true, fmt.Errorf("extraneous input %s at position %d", n, n.pos)
			}
			return name, props, true, nil
		case sep.kind != tokPunct || sep.text != ",":
			return name, nil, true, fmt.Errorf("mismatched input %s at position %d, expecting ',' or ')'", sep, sep.pos)
		}
	}
}

// answerAlter answers ALTER CATALOG <name> SET PROPERTIES: the properties of a
// declared catalog change (SHOW CREATE CATALOG shows them) on every endpoint
// sharing the model. It reports whether the statement was one.
func (s *Server) answerAlter(w http.ResponseWriter, stmt string) bool {
	name, props, ok, err := alterStatement(stmt)
	if !ok {
		return false
	}
	if err != nil {
		writeEnvelope(w, 1, "Failed to execute sql: errCode = 2, detailMessage = Syntax error: "+err.Error())
		return true
	}
	if !s.declared(name) || s.catalogs == nil {
		writeEnvelope(w, 1, fmt.Sprintf("Failed to execute sql: errCode = 2, detailMessage = Unknown catalog '%s'", name))
		return true
	}
	s.m.mu.Lock()
	if s.m.altered == nil {
		s.m.altered = map[string]map[string]string{}
	}
	if s.m.altered[name] == nil {
		s.m.altered[name] = map[string]string{}
	}
	for k, v := range props {
		s.m.altered[name][k] = v
	}
	s.m.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"msg": "success", "code": 0, "count": 0,
		"data": map[string]any{"type": "exec_status", "status": map[string]any{}}})
	return true
}
