package fetest

import (
	"fmt"
	"strings"
)

// Kind is the kind of statement the fake FE understands.
type Kind string

const (
	RefreshCatalog  Kind = "REFRESH CATALOG"
	RefreshDatabase Kind = "REFRESH DATABASE"
	RefreshTable    Kind = "REFRESH TABLE"
	// SelectOne is SELECT 1, the probe a client may use to check that the FE
	// is reachable and accepts its credentials.
	SelectOne Kind = "SELECT 1"
)

// Statement is a parsed statement. Names are as written, unquoted; an omitted
// qualifier is "".
type Statement struct {
	Kind       Kind
	Catalog    string
	DB         string
	Table      string
	Properties map[string]string
}

// InvalidCache is the statement's invalid_cache property (default true).
func (s Statement) InvalidCache() bool {
	return s.Properties["invalid_cache"] != "false"
}

// ParseStatement parses sql with the grammar of Doris's REFRESH statements
// (reference §3) plus SELECT 1:
//
//	REFRESH CATALOG <ctl> [PROPERTIES("invalid_cache"="true"|"false")]
//	REFRESH DATABASE [<ctl>.]<db> [PROPERTIES("invalid_cache"="true"|"false")]
//	REFRESH TABLE [[<ctl>.]<db>.]<tbl>
//
// Keywords are case-insensitive; identifiers are plain (letters, digits, _) or
// backtick-quoted with an embedded backtick doubled; whitespace and comments
// (-- to the end of the line, /* ... */) separate tokens; one trailing semicolon
// is allowed. Anything else is an error, as Doris would answer it.
func ParseStatement(sql string) (Statement, error) {
	toks, err := lex(sql)
	if err != nil {
		return Statement{}, err
	}
	p := &parser{toks: toks}
	st, err := p.statement()
	if err != nil {
		return Statement{}, err
	}
	if p.peek().kind == tokPunct && p.peek().text == ";" {
		p.next()
	}
	if t := p.peek(); t.kind != tokEOF {
		return Statement{}, fmt.Errorf("extraneous input %s at position %d, expecting end of statement", t, t.pos)
	}
	return st, nil
}

type tokKind int

const (
	tokEOF    tokKind = iota
	tokWord           // unquoted identifier or keyword
	tokQuoted         // backtick-quoted identifier
	tokString         // '...' or "..."
	tokNumber
	tokPunct
)

type token struct {
	kind tokKind
	text string // unquoted value
	pos  int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "<EOF>"
	case tokQuoted:
		return "`" + strings.ReplaceAll(t.text, "`", "``") + "`"
	case tokString:
		return fmt.Sprintf("%q", t.text)
	}
	return "'" + t.text + "'"
}

func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j + 1
			}
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("unterminated comment at position %d", i)
			}
			i += 2 + j + 2
		case c == '`':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated quoted identifier at position %d", i)
				}
				if s[j] == '`' {
					if j+1 < len(s) && s[j+1] == '`' {
						b.WriteByte('`')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, token{tokQuoted, b.String(), i})
			i = j + 1
		case c == '\'' || c == '"':
			str, n, err := lexString(s[i:])
			if err != nil {
				return nil, fmt.Errorf("%v at position %d", err, i)
			}
			out = append(out, token{tokString, str, i})
			i += n
		case isIdentByte(c):
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			kind := tokWord
			if strings.Trim(s[i:j], "0123456789") == "" {
				kind = tokNumber
			}
			out = append(out, token{kind, s[i:j], i})
			i = j
		case strings.IndexByte(".(),=;", c) >= 0:
			out = append(out, token{tokPunct, string(c), i})
			i++
		default:
			return nil, fmt.Errorf("token recognition error at position %d: %q", i, s[i:min(i+8, len(s))])
		}
	}
	return append(out, token{tokEOF, "", len(s)}), nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// lexString reads a string literal at the start of s: the quote doubled or
// backslash-escaped stands for itself. It returns the value and its length in s.
func lexString(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '\\' && j+1 < len(s):
			j++
			switch s[j] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			default:
				b.WriteByte(s[j])
			}
		case c == q && j+1 < len(s) && s[j+1] == q:
			b.WriteByte(q)
			j++
		case c == q:
			return b.String(), j + 1, nil
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string literal")
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) keyword(kw string) bool {
	t := p.peek()
	if t.kind == tokWord && strings.EqualFold(t.text, kw) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expect(kind tokKind, text, want string) error {
	t := p.next()
	if t.kind != kind || (text != "" && t.text != text) {
		return fmt.Errorf("mismatched input %s at position %d, expecting %s", t, t.pos, want)
	}
	return nil
}

func (p *parser) statement() (Statement, error) {
	if p.keyword("SELECT") {
		if t := p.next(); t.kind != tokNumber || t.text != "1" {
			return Statement{}, fmt.Errorf("this FE only answers SELECT 1, not SELECT %s", t)
		}
		return Statement{Kind: SelectOne}, nil
	}
	if !p.keyword("REFRESH") {
		t := p.peek()
		return Statement{}, fmt.Errorf("mismatched input %s at position %d, expecting REFRESH", t, t.pos)
	}
	var st Statement
	var maxParts int
	switch {
	case p.keyword("CATALOG"):
		st.Kind, maxParts = RefreshCatalog, 1
	case p.keyword("DATABASE"):
		st.Kind, maxParts = RefreshDatabase, 2
	case p.keyword("TABLE"):
		st.Kind, maxParts = RefreshTable, 3
	default:
		t := p.peek()
		return Statement{}, fmt.Errorf("mismatched input %s at position %d, expecting CATALOG, DATABASE or TABLE", t, t.pos)
	}
	parts, err := p.name(maxParts)
	if err != nil {
		return Statement{}, err
	}
	names := make([]string, maxParts-len(parts), maxParts) // omitted qualifiers are ""
	names = append(names, parts...)
	switch st.Kind {
	case RefreshCatalog:
		st.Catalog = names[0]
	case RefreshDatabase:
		st.Catalog, st.DB = names[0], names[1]
	case RefreshTable:
		st.Catalog, st.DB, st.Table = names[0], names[1], names[2]
	}
	if st.Kind != RefreshTable && p.keyword("PROPERTIES") {
		if st.Properties, err = p.properties(); err != nil {
			return Statement{}, err
		}
	}
	return st, nil
}

// name reads up to max dot-separated identifiers.
func (p *parser) name(max int) ([]string, error) {
	var parts []string
	for {
		t := p.next()
		if t.kind != tokWord && t.kind != tokQuoted {
			return nil, fmt.Errorf("mismatched input %s at position %d, expecting an identifier", t, t.pos)
		}
		if t.kind == tokWord && isReserved(t.text) {
			return nil, fmt.Errorf("%s is a reserved word at position %d; quote it with backticks", t, t.pos)
		}
		if t.text == "" {
			return nil, fmt.Errorf("empty identifier at position %d", t.pos)
		}
		parts = append(parts, t.text)
		if n := p.peek(); n.kind != tokPunct || n.text != "." {
			return parts, nil
		}
		if len(parts) == max {
			n := p.peek()
			return nil, fmt.Errorf("extraneous input %s at position %d: a name has at most %d parts here", n, n.pos, max)
		}
		p.next()
	}
}

func isReserved(w string) bool {
	switch strings.ToUpper(w) {
	case "PROPERTIES", "REFRESH", "CATALOG", "DATABASE", "TABLE", "SELECT":
		return true
	}
	return false
}

// properties reads ("k"="v", ...) and accepts only invalid_cache=true|false,
// the one property the REFRESH statements know.
func (p *parser) properties() (map[string]string, error) {
	if err := p.expect(tokPunct, "(", "'('"); err != nil {
		return nil, err
	}
	props := map[string]string{}
	for {
		k := p.next()
		if k.kind != tokString {
			return nil, fmt.Errorf("mismatched input %s at position %d, expecting a property name string", k, k.pos)
		}
		if err := p.expect(tokPunct, "=", "'='"); err != nil {
			return nil, err
		}
		v := p.next()
		if v.kind != tokString {
			return nil, fmt.Errorf("mismatched input %s at position %d, expecting a property value string", v, v.pos)
		}
		if k.text != "invalid_cache" {
			return nil, fmt.Errorf("unknown property %q", k.text)
		}
		lv := strings.ToLower(v.text)
		if lv != "true" && lv != "false" {
			return nil, fmt.Errorf("invalid_cache must be true or false, not %q", v.text)
		}
		props[k.text] = lv
		t := p.next()
		if t.kind == tokPunct && t.text == ")" {
			return props, nil
		}
		if t.kind != tokPunct || t.text != "," {
			return nil, fmt.Errorf("mismatched input %s at position %d, expecting ',' or ')'", t, t.pos)
		}
	}
}
