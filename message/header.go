package message

import (
	"encoding/base64"
	"strings"
)

// Header fields are decoded as the mail readers people use decode them:
// RFC 2047 encoded words here, raw 8-bit bytes and charsets in
// charset.go, RFC 5322 addresses with comments and obsolete forms in
// address.go, and RFC 2045 and RFC 2231 parameters in params.go. Each
// step keeps what it cannot decode as written instead of giving up on the
// whole field, since one broken word in a subject is no reason to lose
// the rest.

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
