package message

// The two ways render reads the tokens of a sanitized body. bluemonday
// writes HTML in a narrow form: escaped text, and tags of a lower-case
// name and ` key="escaped value"` attributes. bmTokens reads that form
// alone and gives up on anything else; xhtml.Tokenizer reads any HTML,
// and render falls back to it. Reading the form directly saves the
// tokenizer's second pass over every body (bluemonday made the first),
// its 4 KiB buffer and a copy of every name and attribute.

import (
	"strings"

	xhtml "golang.org/x/net/html"
)

// tokens is what render reads a body through.
type tokens interface {
	// Next reads the next token: as xhtml.Tokenizer's Next, and
	// xhtml.ErrorToken at the end of the input.
	Next() xhtml.TokenType
	// Len is the length of the token as written.
	Len() int
	// Text is a text token's text, unescaped, valid until Next.
	Text() []byte
	// Name is a tag token's name, lower-case.
	Name() string
	// Attrs appends a start tag's attributes to dst, as TagAttr gives
	// them.
	Attrs(dst []xhtml.Attribute) []xhtml.Attribute
	// Bad reports that Next stopped on input it cannot read.
	Bad() bool
}

// htmlTokens reads any HTML with xhtml.Tokenizer. Names and attributes of
// tags written as bluemonday writes them are read from the token as
// written (rawTagName, rawAttrs): TagName and TagAttr copy each.
type htmlTokens struct {
	z          *xhtml.Tokenizer
	s          string // what z reads
	start, pos int    // the current token is s[start:pos]
	name       string
	fast       bool // name and attributes are read from s
}

func newHTMLTokens(s string) *htmlTokens {
	return &htmlTokens{z: xhtml.NewTokenizer(strings.NewReader(s)), s: s}
}

func (t *htmlTokens) Next() xhtml.TokenType {
	tt := t.z.Next()
	// Tokens tile the input, so their raw lengths give their offsets.
	t.start = t.pos
	t.pos += len(t.z.Raw())
	t.name, t.fast = "", false
	switch tt {
	case xhtml.StartTagToken, xhtml.EndTagToken, xhtml.SelfClosingTagToken:
		t.name = rawTagName(t.s[t.start:t.pos])
		t.fast = t.name != ""
		if !t.fast {
			n, _ := t.z.TagName()
			t.name = string(n)
		}
	}
	return tt
}

func (t *htmlTokens) Len() int     { return t.pos - t.start }
func (t *htmlTokens) Text() []byte { return t.z.Text() }
func (t *htmlTokens) Name() string { return t.name }
func (t *htmlTokens) Bad() bool    { return false }

func (t *htmlTokens) Attrs(dst []xhtml.Attribute) []xhtml.Attribute {
	if t.fast {
		if attrs, ok := rawAttrs(t.s[t.start:t.pos], len(t.name), dst); ok {
			return attrs
		}
	}
	// TagAttr returns no key once the attributes are read, and at once
	// for a tag that has none.
	for more := true; more; {
		var key, val []byte
		if key, val, more = t.z.TagAttr(); key == nil {
			break
		}
		dst = append(dst, xhtml.Attribute{Key: string(key), Val: string(val)})
	}
	return dst
}

// rawAttrs appends the attributes of the start tag raw, whose name is
// nameLen bytes long, to attrs as the tokenizer's TagAttr would give them,
// when raw is written as bluemonday writes every tag: the name, then
// ` key="value"` for each attribute, then ">" or "/>", with keys of
// lower-case letters, digits, "-", "_" and ":", none twice, and values
// without "&", CR or NUL, which TagAttr would unescape or replace.
// Otherwise it returns attrs as it was and false.
func rawAttrs(raw string, nameLen int, attrs []xhtml.Attribute) ([]xhtml.Attribute, bool) {
	first := len(attrs)
	for i := 1 + nameLen; ; {
		switch rest := raw[i:]; {
		case rest == ">" || rest == "/>":
			return attrs, true
		case rest == "" || rest[0] != ' ':
			return attrs[:first], false
		}
		key, val, n := cutAttr(raw[i:])
		if n == 0 || strings.ContainsAny(val, "&\r\x00") || hasKey(attrs[first:], key) {
			return attrs[:first], false
		}
		attrs = append(attrs, xhtml.Attribute{Key: key, Val: val})
		i += n
	}
}

// cutAttr reads the attribute ` key="value"` at the start of s, and
// returns its key, its value as written and its length; or a length of
// 0 when s does not start with one.
func cutAttr(s string) (key, val string, n int) {
	j := 1
	for j < len(s) && isAttrKeyByte(s[j]) {
		j++
	}
	if j == 1 || j+1 >= len(s) || s[j] != '=' || s[j+1] != '"' {
		return "", "", 0
	}
	end := strings.IndexByte(s[j+2:], '"')
	if end < 0 {
		return "", "", 0
	}
	return s[1:j], s[j+2 : j+2+end], j + 2 + end + 1
}

func hasKey(attrs []xhtml.Attribute, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

func isAttrKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == ':'
}

// rawTagName returns the name of the tag token raw, as the tokenizer's
// TagName would, when it is plain lower-case ASCII letters and digits, as
// bluemonday writes every name; else "", and the caller asks TagName.
func rawTagName(raw string) string {
	i := 1
	if len(raw) > 1 && raw[1] == '/' {
		i = 2
	}
	j := i
	for ; j < len(raw); j++ {
		c := raw[j]
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			continue
		}
		switch c {
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			return raw[i:j]
		}
		return ""
	}
	return ""
}

// bmTokens reads HTML written as bluemonday writes it, giving the tokens
// xhtml.Tokenizer would give. It reads:
//
//   - text up to the next "<", which must start a tag, without CR or
//     NUL, whose every "&" starts one of the references escape writes
//     (&amp; &lt; &gt; &#39; &#34; &#13;);
//   - end tags "</name>";
//   - start tags "<name", then ` key="value"` for each attribute (no key
//     twice, the values as text is but with no "\r" to convert), then ">"
//     or "/>";
//
// where a name is lower-case ASCII letters and digits, starting with a
// letter, and not one of the elements whose content the tokenizer reads
// raw. On anything else bad is set and Next returns ErrorToken: render
// starts again with htmlTokens.
type bmTokens struct {
	s          string
	start, pos int // the current token is s[start:pos]
	name       string
	attrs      [][2]string // a start tag's attributes as written
	text       []byte
	bad        bool
}

func (t *bmTokens) fail() xhtml.TokenType {
	t.bad = true
	return xhtml.ErrorToken
}

func (t *bmTokens) Next() xhtml.TokenType {
	s := t.s
	t.start = t.pos
	if t.pos >= len(s) {
		return xhtml.ErrorToken
	}
	if s[t.pos] != '<' {
		end := strings.IndexByte(s[t.pos:], '<')
		if end < 0 {
			end = len(s) - t.pos
		} else if !tagStart(s[t.pos+end:]) {
			// The tokenizer would read on, and render may stop after
			// this token: it must be the tokenizer's.
			return t.fail()
		}
		raw := s[t.pos : t.pos+end]
		if strings.ContainsAny(raw, "\r\x00") {
			return t.fail()
		}
		var ok bool
		if t.text, ok = unescapeRefs(t.text[:0], raw); !ok {
			return t.fail()
		}
		t.pos += end
		return xhtml.TextToken
	}
	i := t.pos + 1
	endTag := i < len(s) && s[i] == '/'
	if endTag {
		i++
	}
	n := i
	if n >= len(s) || s[n] < 'a' || s[n] > 'z' {
		return t.fail()
	}
	for n < len(s) && ('a' <= s[n] && s[n] <= 'z' || '0' <= s[n] && s[n] <= '9') {
		n++
	}
	t.name = s[i:n]
	if rawTextElement(t.name) {
		return t.fail()
	}
	if endTag {
		if n >= len(s) || s[n] != '>' {
			return t.fail()
		}
		t.pos = n + 1
		return xhtml.EndTagToken
	}
	t.attrs = t.attrs[:0]
	for i = n; ; {
		switch rest := s[i:]; {
		case strings.HasPrefix(rest, ">"):
			t.pos = i + 1
			return xhtml.StartTagToken
		case strings.HasPrefix(rest, "/>"):
			t.pos = i + 2
			return xhtml.SelfClosingTagToken
		case rest == "" || rest[0] != ' ':
			return t.fail()
		}
		key, val, n := cutAttr(s[i:])
		if n == 0 || strings.ContainsAny(val, "\r\x00") || !validRefs(val) {
			return t.fail()
		}
		for _, a := range t.attrs {
			if a[0] == key {
				return t.fail()
			}
		}
		t.attrs = append(t.attrs, [2]string{key, val})
		i += n
	}
}

func (t *bmTokens) Len() int     { return t.pos - t.start }
func (t *bmTokens) Text() []byte { return t.text }
func (t *bmTokens) Name() string { return t.name }
func (t *bmTokens) Bad() bool    { return t.bad }

func (t *bmTokens) Attrs(dst []xhtml.Attribute) []xhtml.Attribute {
	for _, a := range t.attrs {
		val := a[1]
		if strings.IndexByte(val, '&') >= 0 {
			b, _ := unescapeRefs(nil, val)
			val = string(b)
		}
		dst = append(dst, xhtml.Attribute{Key: a[0], Val: val})
	}
	return dst
}

// tagStart reports whether s, which starts with "<", starts a tag as
// bmTokens reads them: "<" or "</", then a lower-case letter.
func tagStart(s string) bool {
	i := 1
	if i < len(s) && s[i] == '/' {
		i++
	}
	return i < len(s) && 'a' <= s[i] && s[i] <= 'z'
}

// rawTextElement reports whether the tokenizer reads the content of the
// element name as raw text (its readStartTag).
func rawTextElement(name string) bool {
	switch name {
	case "iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp":
		return true
	}
	return false
}

// refs are the character references html.EscapeString and the tokenizer's
// escape write, and what they stand for.
var refs = [...]struct{ ref, char string }{
	{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#39;", "'"}, {"&#34;", `"`}, {"&#13;", "\r"},
}

// unescapeRefs appends s to dst with refs unescaped, and reports false
// when an "&" in s starts none of them.
func unescapeRefs(dst []byte, s string) ([]byte, bool) {
	for {
		i := strings.IndexByte(s, '&')
		if i < 0 {
			return append(dst, s...), true
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		r := refAt(s)
		if r < 0 {
			return dst, false
		}
		dst = append(dst, refs[r].char...)
		s = s[len(refs[r].ref):]
	}
}

// validRefs reports whether every "&" in s starts one of refs.
func validRefs(s string) bool {
	for {
		i := strings.IndexByte(s, '&')
		if i < 0 {
			return true
		}
		r := refAt(s[i:])
		if r < 0 {
			return false
		}
		s = s[i+len(refs[r].ref):]
	}
}

// refAt returns the index in refs of the reference s starts with, or -1.
func refAt(s string) int {
	for i, r := range refs {
		if strings.HasPrefix(s, r.ref) {
			return i
		}
	}
	return -1
}
