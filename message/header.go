package message

import (
	"bytes"
	"encoding/base64"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message/charset"
	htmlcharset "golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// This file decodes header fields as the mail readers people use do:
// RFC 2047 encoded words, raw 8-bit bytes, RFC 5322 addresses with
// comments and obsolete forms, and RFC 2231 parameters. Each step keeps
// what it cannot decode as written instead of giving up on the whole
// field, since one broken word in a subject is no reason to lose the rest.

// decodeHeader returns the header value v, as read from the message,
// decoded to valid UTF-8. Encoded words (RFC 2047) are decoded anywhere in
// v, as readers do, and the white space between two adjacent ones is
// dropped (§6.2). Adjacent words in one charset are joined before they are
// decoded, so a character whose bytes a sender split between two words
// survives. A word in a charset nobody knows, or whose payload does not
// decode, stays as written; the text around it is decoded all the same.
// Bytes outside encoded words are read by rawToUTF8.
func decodeHeader(v string) string {
	if !strings.Contains(v, "=?") {
		return rawToUTF8(v)
	}
	var (
		out  strings.Builder
		cs   string // the charset of the run of words not yet written
		data []byte // their bytes, in cs
		run  bool   // whether there is such a run
	)
	flush := func() {
		if run {
			s, _ := decodeCharset(data, cs) // known: see below
			out.WriteString(s)
			run, data = false, data[:0]
		}
	}
	pos := 0 // v[:pos] is written, or in the run
	for pos < len(v) {
		i := strings.Index(v[pos:], "=?")
		if i < 0 {
			break
		}
		i += pos
		w, n, ok := parseEncodedWord(v[i:])
		if ok {
			_, ok = decodeCharset(nil, w.charset)
		}
		if !ok {
			// Not a word, or one in a charset nobody knows: text as
			// written, up to the end of what was looked at.
			if n == 0 {
				n = 2
			}
			flush()
			out.WriteString(rawToUTF8(v[pos : i+n]))
			pos = i + n
			continue
		}
		gap := v[pos:i]
		switch {
		case run && isBlank(gap) && w.charset == cs:
			// RFC 2047 §6.2: white space between adjacent encoded words
			// is not displayed; the words' bytes join.
		case run && isBlank(gap):
			flush()
		default:
			flush()
			out.WriteString(rawToUTF8(gap))
		}
		cs, run = w.charset, true
		data = append(data, w.data...)
		pos = i + n
	}
	flush()
	out.WriteString(rawToUTF8(v[pos:]))
	return out.String()
}

// encodedWord is an RFC 2047 encoded word with its payload decoded.
type encodedWord struct {
	charset string // lower case, without an RFC 2231 language tag
	data    []byte // the payload's bytes, in charset
}

// parseEncodedWord parses the encoded word "=?charset?enc?text?=" at the
// start of s and returns it and its length. It is lenient where senders
// are careless: the text may hold spaces, 8-bit bytes and "=" not followed
// by hex digits, which stand for themselves; base64 may lack its padding.
// It reports false when s does not start with a word it can decode.
func parseEncodedWord(s string) (encodedWord, int, bool) {
	rest := s[2:]
	q := strings.IndexByte(rest, '?')
	if q <= 0 || q+2 >= len(rest) || rest[q+2] != '?' {
		return encodedWord{}, 0, false
	}
	cs := rest[:q]
	if strings.ContainsAny(cs, " \t\r\n=") {
		return encodedWord{}, 0, false
	}
	// RFC 2231 §5: a language may follow the charset, "iso-8859-2*sl".
	cs, _, _ = strings.Cut(cs, "*")
	enc := rest[q+1]
	text := rest[q+3:]
	// The word ends at the first "?=", unless another "=?" comes first:
	// then this one is broken. Looking no further than that "=?" keeps a
	// header of many broken words linear to decode.
	end := -1
	for j := 0; j+1 < len(text) && end < 0; j++ {
		switch {
		case text[j] == '?' && text[j+1] == '=':
			end = j
		case text[j] == '=' && text[j+1] == '?' && (j+2 == len(text) || text[j+2] != '='):
			return encodedWord{}, 0, false // not the "=" of base64 padding before "?="
		}
	}
	if end < 0 {
		return encodedWord{}, 0, false
	}
	text = text[:end]
	var data []byte
	switch enc {
	case 'Q', 'q':
		data = decodeQ(text)
	case 'B', 'b':
		var ok bool
		if data, ok = decodeB(text); !ok {
			return encodedWord{}, 0, false
		}
	default:
		return encodedWord{}, 0, false
	}
	n := 2 + q + 3 + end + 2
	return encodedWord{charset: strings.ToLower(cs), data: data}, n, true
}

// decodeQ decodes the "Q" encoding of RFC 2047 §4.2. A byte that the
// encoding should have escaped (an 8-bit byte, a space) stands for itself,
// and so does an "=" without two hex digits after it.
func decodeQ(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '_':
			out = append(out, ' ')
		case c == '=' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]):
			out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			out = append(out, c)
		}
	}
	return out
}

// decodeB decodes the "B" encoding of RFC 2047 §4.1, with or without
// padding, ignoring white space in it.
func decodeB(s string) ([]byte, bool) {
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(s, "=")
	if len(s)%4 == 1 { // a lone trailing sextet holds no whole byte
		s = s[:len(s)-1]
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	return b, true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isBlank(s string) bool {
	return strings.Trim(s, " \t\r\n") == ""
}

// rawToUTF8 returns s, header text outside any encoded word, as UTF-8: s
// itself when it is valid UTF-8 (RFC 6532 allows it), else read as
// Windows-1252, as browsers read undeclared 8-bit text and as toUTF8 reads
// an undeclared body.
func rawToUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out, err := charmap.Windows1252.NewDecoder().String(s)
	if err != nil {
		return validUTF8(s)
	}
	return out
}

// isASCIICharset reports whether name is one of the IANA names of
// US-ASCII, which x/text has no decoder for.
func isASCIICharset(name string) bool {
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-") {
	case "us-ascii", "ascii", "ansi-x3.4-1968", "ansi-x3.4-1986", "iso646-us", "iso-646.irv:1991",
		"us", "ibm367", "cp367", "csascii", "iso-ir-6", "646":
		return true
	}
	return false
}

// decodeCharset returns data, in the named charset, as valid UTF-8, and
// reports whether the charset is known. Text labelled US-ASCII, or not
// labelled, that holds 8-bit bytes is read by rawToUTF8; UTF-8 that is not
// valid gets U+FFFD, as in bodies (toUTF8); ISO-8859-1 is read as
// Windows-1252, as browsers read it.
func decodeCharset(data []byte, name string) (string, bool) {
	name = strings.ToLower(strings.Trim(name, " \t\"'"))
	switch {
	case name == "utf-8" || name == "utf8":
		return validUTF8(string(data)), true
	case name == "" || isASCIICharset(name):
		return rawToUTF8(string(data)), true
	case isUTF7(name):
		return decodeUTF7(data), true
	case isUTF16(name):
		return decodeUTF16(data), true
	}
	r, err := charset.Reader(name, bytes.NewReader(data))
	if err != nil {
		return "", false
	}
	// Decoders replace what they cannot map with U+FFFD and do not fail;
	// a fault in the middle keeps what came before it.
	out, _ := io.ReadAll(r)
	s := validUTF8(string(out))
	if _, html := htmlcharset.Lookup(name); html == "windows-1252" {
		s = strings.Map(c1ToWindows1252, s)
	}
	return s, true
}

// isUTF16 reports whether name is the label "UTF-16", which names no byte
// order.
func isUTF16(name string) bool {
	name = strings.ToLower(strings.Trim(name, " \t\"'"))
	return name == "utf-16" || name == "utf16"
}

// decodeUTF16 returns data, labelled UTF-16, as valid UTF-8: in the byte
// order of its BOM, else little-endian. Browsers read the label so
// (WHATWG Encoding: "utf-16" is UTF-16LE) and Windows mailers write it so;
// RFC 2781's big-endian default made their text CJK noise (issue 23, the
// real-world corpus's spamassassin/spam/utf16.eml).
func decodeUTF16(data []byte) string {
	out, _ := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewDecoder().Bytes(data)
	return validUTF8(string(out))
}

// sender returns the address and display name of the first mailbox in
// the From header that holds one, or envelopeFrom and no name when there
// is none (spec §3). The name is RFC 2047-decoded as well as it can be.
func sender(from string, envelopeFrom string) (addr, name string) {
	addr, name, ok := firstMailbox(from)
	if !ok {
		return envelopeFrom, ""
	}
	return addr, name
}

// addrToken is a lexical token of an address header (RFC 5322 §3.2).
type addrToken struct {
	kind  byte   // 'a' atom, '"' quoted string, '(' comment, '<' angle address, or the special itself
	text  string // the atom, the string unquoted, the comment's text, the angle address's content
	space bool   // white space or a comment came before the token
}

// lexAddress splits an address header into tokens. It never fails: an
// unterminated quoted string, comment or angle address runs to the end.
// Raw 8-bit bytes are atom text, so names keep them for decodeHeader.
func lexAddress(v string) []addrToken {
	var (
		toks  []addrToken
		space bool
	)
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case ' ', '\t', '\r', '\n':
			space = true
			i++
		case '(':
			text, n := delimited(v[i:], '(', ')')
			toks = append(toks, addrToken{kind: '(', text: text, space: space})
			space = true
			i += n
		case '"':
			text, n := delimited(v[i:], '"', '"')
			toks = append(toks, addrToken{kind: '"', text: text, space: space})
			space = false
			i += n
		case '<':
			end := strings.IndexByte(v[i+1:], '>')
			if end < 0 {
				end = len(v) - i - 1
			}
			toks = append(toks, addrToken{kind: '<', text: v[i+1 : i+1+end], space: space})
			space = false
			i += 1 + end + 1
		case '[':
			end := strings.IndexByte(v[i:], ']')
			if end < 0 {
				end = len(v) - i - 1
			}
			toks = append(toks, addrToken{kind: 'a', text: v[i : i+end+1], space: space})
			space = false
			i += end + 1
		case ',', ';', ':', '@', '.', '>':
			toks = append(toks, addrToken{kind: c, text: string(c), space: space})
			space = false
			i++
		default:
			j := i
			for j < len(v) && !strings.ContainsRune(" \t\r\n()\"<>[],;:@.", rune(v[j])) {
				j++
			}
			if j == i { // a stray ")"
				j++
			}
			toks = append(toks, addrToken{kind: 'a', text: v[i:j], space: space})
			space = false
			i = j
		}
	}
	return toks
}

// delimited returns the content of the quoted string or comment at the
// start of s, with quoted pairs unescaped (nested comments keep their
// parentheses), and its length in s.
func delimited(s string, open, closing byte) (string, int) {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			continue
		case c == closing && (open != closing || i > 0):
			depth--
			if depth == 0 {
				return b.String(), i + 1
			}
		case c == open:
			depth++
			if depth == 1 {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String(), len(s)
}

// firstMailbox returns the address and decoded display name of the first
// mailbox in the address list v that has a usable address: a local part
// and a domain. Groups (RFC 5322 §3.4) are looked into; comments are
// dropped from addresses, and a comment names a bare address that has no
// display name ("pat@example.test (Pat)"), as readers show it.
func firstMailbox(v string) (addr, name string, ok bool) {
	toks := lexAddress(v)
	start := 0
	begun := false // whether toks[start:i] holds "<" or "@"
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) {
			switch toks[i].kind {
			case '<', '@':
				begun = true
				continue
			case ':':
				// A display name before a colon names a group, unless an
				// address has begun: then it is an obsolete route.
				if !begun {
					start = i + 1
				}
				continue
			case ',', ';':
			default:
				continue
			}
		}
		if addr, name, ok := mailbox(toks[start:i]); ok {
			return addr, name, true
		}
		start, begun = i+1, false
	}
	return "", "", false
}

// mailbox parses one mailbox of an address list: a name and an angle
// address, or a bare address, possibly preceded by words a sender meant
// as the name ("Pat pat@example.test").
func mailbox(toks []addrToken) (addr, name string, ok bool) {
	for i, t := range toks {
		if t.kind == '<' {
			addr, ok = addrSpec(lexAddress(t.text))
			return addr, phrase(toks[:i]), ok
		}
	}
	// Comments in a bare address separate nothing: drop them, and keep
	// the first as the name should there be no other.
	var comment string
	bare := make([]addrToken, 0, len(toks))
	for _, t := range toks {
		if t.kind == '(' {
			if comment == "" {
				comment = t.text
			}
			continue
		}
		bare = append(bare, t)
	}
	toks = bare
	at := -1
	for i, t := range toks {
		if t.kind == '@' {
			at = i
			break
		}
	}
	if at < 0 {
		return "", "", false
	}
	// The address is the tokens around "@" that hang together: a space
	// ends it, except around the dots of obsolete "pat . doe".
	joined := func(i int) bool { // whether toks[i] continues toks[i-1]
		return !toks[i].space || toks[i].kind == '.' || toks[i-1].kind == '.' || toks[i].kind == '@' || toks[i-1].kind == '@'
	}
	begin := at
	for begin > 0 && isAddrPart(toks[begin-1]) && joined(begin) {
		begin--
	}
	end := at + 1
	for end < len(toks) && isAddrPart(toks[end]) && joined(end) {
		end++
	}
	addr, ok = addrSpec(toks[begin:end])
	if !ok {
		return "", "", false
	}
	if name = phrase(toks[:begin]); name == "" {
		name = strings.TrimSpace(decodeHeader(comment))
	}
	return addr, name, true
}

func isAddrPart(t addrToken) bool {
	return t.kind == 'a' || t.kind == '"' || t.kind == '.'
}

// addrSpec returns the address that toks spell, local@domain, with
// comments and an obsolete source route ("@relay.test:pat@example.test")
// dropped. It reports false unless there is exactly one "@" with a local
// part before it and a domain after it.
func addrSpec(toks []addrToken) (string, bool) {
	for i := len(toks) - 1; i >= 0; i-- {
		if toks[i].kind == ':' {
			toks = toks[i+1:]
			break
		}
	}
	var local, domain strings.Builder
	dst := &local
	ats := 0
	var prev byte // the kind of the last token that was not a comment
	for _, t := range toks {
		if t.kind == '(' {
			continue
		}
		word := t.kind == 'a' || t.kind == '"'
		if word && (prev == 'a' || prev == '"') {
			return "", false // "pat doe@example.test": two words, not a local part
		}
		switch t.kind {
		case '@':
			ats++
			dst = &domain
		case '"':
			dst.WriteString(quoteLocal(t.text))
		case 'a', '.':
			dst.WriteString(t.text)
		default:
			return "", false
		}
		prev = t.kind
	}
	if ats != 1 || local.Len() == 0 || domain.Len() == 0 {
		return "", false
	}
	return rawToUTF8(local.String() + "@" + domain.String()), true
}

// quoteLocal returns s, a quoted local part unquoted, quoted again if it
// needs to be (RFC 5322 §3.4.1: dot-atom text stands bare).
func quoteLocal(s string) string {
	bare := s != "" && !strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".") && !strings.Contains(s, "..")
	for i := 0; i < len(s) && bare; i++ {
		bare = s[i] >= utf8.RuneSelf || strings.IndexByte(" \t\"(),.:;<>@[\\]", s[i]) < 0 || s[i] == '.'
	}
	if bare {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// phrase returns the display name toks spell, comments dropped, words
// joined by single spaces, and decoded.
func phrase(toks []addrToken) string {
	var b strings.Builder
	for _, t := range toks {
		if t.kind == '(' {
			continue
		}
		if t.space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return strings.TrimSpace(decodeHeader(b.String()))
}

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
