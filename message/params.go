package message

import "strings"

// The parameters of Content-Type (RFC 2045 §5.1) and Content-Disposition
// (RFC 2183), with RFC 2231's charsets and continuations.

// parseMediaType returns the lower-case media type of the Content-Type
// value v and its parameters, keyed by lower-case name. It is lenient as
// readers are: a parameter it cannot parse is skipped, the first of two
// with one name counts, comments are dropped, and RFC 2231 parameters
// (name*=charset'lang'value, continued as name*0*=, name*1=, …) are
// decoded in any charset. It reports false when v names no type/subtype.
func parseMediaType(v string) (string, map[string]string, bool) {
	t, rest, _ := strings.Cut(v, ";")
	t = strings.ToLower(strings.TrimSpace(stripComments(t)))
	if typ, sub, ok := strings.Cut(t, "/"); !ok || typ == "" || sub == "" || strings.ContainsAny(typ+sub, "/ \t\"") {
		return "", nil, false
	}
	return t, parseParams(rest), true
}

// parseDisposition returns the lower-case disposition of the
// Content-Disposition value v ("attachment", "inline", "" when none) and
// its parameters, read as parseMediaType reads a Content-Type's.
func parseDisposition(v string) (string, map[string]string) {
	d, rest, _ := strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(stripComments(d))), parseParams(rest)
}

// parseParams reads the parameters after a media type's or a
// disposition's first ";", as parseMediaType says.
func parseParams(rest string) map[string]string {
	type section struct {
		value    string
		extended bool // value is charset'lang'pct-encoded (first) or pct-encoded
	}
	var (
		params   map[string]string
		extended map[string]string
		sections map[string]map[int]section
	)
	for rest != "" {
		var p string
		p, rest = cutParam(rest)
		key, value, ok := strings.Cut(p, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok || key == "" {
			continue
		}
		value = unquote(strings.TrimSpace(value))
		base, star := strings.CutSuffix(key, "*")
		n := -1
		if i := strings.LastIndexByte(base, '*'); i >= 0 && allDigits(base[i+1:]) && len(base)-i <= 4 {
			n = atoi(base[i+1:])
			base = base[:i]
		}
		switch {
		case n >= 0:
			if sections == nil {
				sections = map[string]map[int]section{}
			}
			if sections[base] == nil {
				sections[base] = map[int]section{}
			}
			if _, dup := sections[base][n]; !dup {
				sections[base][n] = section{value, star}
			}
		case star:
			if extended == nil {
				extended = map[string]string{}
			}
			if _, dup := extended[base]; !dup {
				extended[base] = decode2231(base, value)
			}
		default:
			if params == nil {
				params = map[string]string{}
			}
			if _, dup := params[base]; !dup {
				params[base] = value
			}
		}
	}
	for base, secs := range sections {
		var (
			raw []byte
			cs  string
		)
		for n := 0; ; n++ {
			s, ok := secs[n]
			if !ok {
				break
			}
			value := s.value
			if n == 0 && s.extended {
				if c, _, v, ok := cutCharsetLang(value); ok {
					cs, value = c, v
				}
			}
			if s.extended {
				raw = append(raw, percentDecode(value)...)
			} else {
				raw = append(raw, value...)
			}
		}
		if raw == nil {
			continue
		}
		if params == nil {
			params = map[string]string{}
		}
		params[base] = paramText(base, raw, cs)
	}
	for base, value := range extended {
		if params == nil {
			params = map[string]string{}
		}
		params[base] = value
	}
	return params
}

// decode2231 decodes the value of an RFC 2231 parameter name*=value.
func decode2231(name, value string) string {
	cs, _, value, _ := cutCharsetLang(value)
	return paramText(name, percentDecode(value), cs)
}

// paramText returns raw, a decoded parameter's bytes in charset cs, as
// text. A boundary is bytes that the body must match, so it stays as it
// is; any other value is decoded, and in a charset nobody knows read by
// rawToUTF8.
func paramText(name string, raw []byte, cs string) string {
	if name == "boundary" {
		return string(raw)
	}
	if s, ok := decodeCharset(raw, cs); ok {
		return s
	}
	return rawToUTF8(string(raw))
}

// cutCharsetLang splits "charset'lang'value" (RFC 2231 §4).
func cutCharsetLang(s string) (cs, lang, value string, ok bool) {
	cs, rest, ok1 := strings.Cut(s, "'")
	lang, value, ok2 := strings.Cut(rest, "'")
	if !ok1 || !ok2 {
		return "", "", s, false
	}
	return cs, lang, value, true
}

// percentDecode decodes %XX escapes; a "%" without two hex digits stays.
func percentDecode(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]) {
			out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		out = append(out, s[i])
	}
	return out
}

// cutParam returns the parameter at the start of s, up to the next ";"
// outside a quoted string, with comments outside quoted strings removed,
// and what follows the ";".
func cutParam(s string) (param, rest string) {
	// Most parameters hold no quoted string and no comment: then the
	// parameter is s up to the ";", and nothing needs building.
	if i := strings.IndexAny(s, ";\"("); i < 0 {
		return s, ""
	} else if s[i] == ';' {
		return s[:i], s[i+1:]
	}
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			b.WriteByte(c)
			i++
			c = s[i]
		case c == '"':
			quoted = !quoted
		case !quoted && c == ';':
			return b.String(), s[i+1:]
		case !quoted && c == '(':
			_, n := delimited(s[i:], '(', ')')
			i += n - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), ""
}

// stripComments removes RFC 5322 comments from s.
func stripComments(s string) string {
	if !strings.Contains(s, "(") {
		return s
	}
	p, _ := cutParam(s)
	return p
}

// unquote returns s without its surrounding quotes and with quoted pairs
// unescaped, or s when it is not quoted.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' {
		return strings.Trim(s, `"`)
	}
	v, _ := delimited(s, '"', '"')
	return v
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}
