package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pyproject holds the tables of a pyproject.toml, by their dotted names
// ("project", "project.entry-points.pytest11"); each key's value is a
// string, a []any of values, or a map[string]any (an inline table).
type pyproject map[string]map[string]any

// parsePyproject reads the part of TOML that clients/python/pyproject.toml
// is written in: comments, [tables], and keys whose values are basic
// strings, arrays (over several lines too) and inline tables. Anything
// else is an error that names its line, so that a new construct in the
// file stops the release rather than go missing from the wheel. (The
// release tool stays on the standard library: burner's TOML library is
// not its to use.)
func parsePyproject(src string) (pyproject, error) {
	p := &tomlParser{src: src, line: 1}
	doc := pyproject{"": {}}
	table := ""
	for {
		p.skipSpace(true)
		if p.eof() {
			return doc, nil
		}
		if p.peek() == '[' {
			p.pos++
			name, err := p.until(']')
			if err != nil {
				return nil, err
			}
			table = strings.TrimSpace(name)
			if table == "" || strings.HasPrefix(table, "[") {
				return nil, p.errorf("want a [table] name")
			}
			if doc[table] == nil {
				doc[table] = map[string]any{}
			}
		} else {
			key, v, err := p.keyValue()
			if err != nil {
				return nil, err
			}
			if _, dup := doc[table][key]; dup {
				return nil, p.errorf("%s is given twice", key)
			}
			doc[table][key] = v
		}
		p.skipSpace(false)
		if !p.eof() && p.peek() != '\n' {
			return nil, p.errorf("want the end of the line, found %q", p.rest())
		}
	}
}

// str returns the string value of key in table, or an error naming it.
func (doc pyproject) str(table, key string) (string, error) {
	s, ok := doc[table][key].(string)
	if !ok {
		return "", fmt.Errorf("pyproject.toml: [%s] %s: want a string", table, key)
	}
	return s, nil
}

// strs returns the array of strings of key in table (nil when absent), or
// an error naming it.
func (doc pyproject) strs(table, key string) ([]string, error) {
	v, ok := doc[table][key]
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	var out []string
	for _, e := range list {
		s, isStr := e.(string)
		if !isStr {
			ok = false
		}
		out = append(out, s)
	}
	if !ok {
		return nil, fmt.Errorf("pyproject.toml: [%s] %s: want an array of strings", table, key)
	}
	return out, nil
}

type tomlParser struct {
	src  string
	pos  int
	line int
}

func (p *tomlParser) eof() bool    { return p.pos >= len(p.src) }
func (p *tomlParser) peek() byte   { return p.src[p.pos] }
func (p *tomlParser) rest() string { return strings.SplitN(p.src[p.pos:], "\n", 2)[0] }

func (p *tomlParser) errorf(format string, args ...any) error {
	return fmt.Errorf("pyproject.toml line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// skipSpace skips blanks and comments, and line ends too when newlines.
func (p *tomlParser) skipSpace(newlines bool) {
	for !p.eof() {
		switch c := p.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n' && newlines:
			p.pos++
			p.line++
		case c == '#':
			for !p.eof() && p.peek() != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// until returns the text up to the byte end on this line, and skips end.
func (p *tomlParser) until(end byte) (string, error) {
	start := p.pos
	for !p.eof() && p.peek() != end && p.peek() != '\n' {
		p.pos++
	}
	if p.eof() || p.peek() != end {
		return "", p.errorf("want %q", end)
	}
	p.pos++
	return p.src[start : p.pos-1], nil
}

// keyValue reads key = value, with a bare or quoted key.
func (p *tomlParser) keyValue() (string, any, error) {
	var key string
	if p.peek() == '"' {
		k, err := p.basicString()
		if err != nil {
			return "", nil, err
		}
		key = k
	} else {
		start := p.pos
		for !p.eof() && isBareKey(p.peek()) {
			p.pos++
		}
		key = p.src[start:p.pos]
		if key == "" {
			return "", nil, p.errorf("want a key, found %q", p.rest())
		}
	}
	p.skipSpace(false)
	if p.eof() || p.peek() != '=' {
		return "", nil, p.errorf("want = after %s (dotted keys are not read here)", key)
	}
	p.pos++
	p.skipSpace(false)
	v, err := p.value()
	return key, v, err
}

func isBareKey(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *tomlParser) value() (any, error) {
	if p.eof() {
		return nil, p.errorf("want a value")
	}
	switch p.peek() {
	case '"':
		if strings.HasPrefix(p.src[p.pos:], `"""`) {
			return nil, p.errorf("multi-line strings are not read here")
		}
		return p.basicString()
	case '[':
		p.pos++
		list := []any{}
		for {
			p.skipSpace(true)
			if p.eof() {
				return nil, p.errorf("an array without its ]")
			}
			if p.peek() == ']' {
				p.pos++
				return list, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			p.skipSpace(true)
			if !p.eof() && p.peek() == ',' {
				p.pos++
			} else if p.eof() || p.peek() != ']' {
				return nil, p.errorf("want , or ] in an array")
			}
		}
	case '{':
		p.pos++
		table := map[string]any{}
		for {
			p.skipSpace(false)
			if !p.eof() && p.peek() == '}' && len(table) == 0 {
				p.pos++
				return table, nil
			}
			k, v, err := p.keyValue()
			if err != nil {
				return nil, err
			}
			table[k] = v
			p.skipSpace(false)
			switch {
			case p.eof():
				return nil, p.errorf("an inline table without its }")
			case p.peek() == ',':
				p.pos++
			case p.peek() == '}':
				p.pos++
				return table, nil
			default:
				return nil, p.errorf("want , or } in an inline table")
			}
		}
	}
	return nil, p.errorf("only strings, arrays and inline tables are read here, not %q", p.rest())
}

// basicString reads a "..." string with TOML's escapes.
func (p *tomlParser) basicString() (string, error) {
	p.pos++ // the opening quote
	var b strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return "", p.errorf("a string without its closing quote")
		}
		c := p.peek()
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return "", p.errorf("a string without its closing quote")
			}
			e := p.src[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if p.pos+n > len(p.src) {
					return "", p.errorf("a short \\%c escape", e)
				}
				r, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
				if err != nil || !utf8.ValidRune(rune(r)) {
					return "", p.errorf("a bad \\%c escape", e)
				}
				b.WriteRune(rune(r))
				p.pos += n
			default:
				return "", p.errorf("an unknown escape \\%c", e)
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}
