package message

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// isUTF7 reports whether charset names UTF-7: its IANA name and aliases,
// and the spellings Outlook and others put in mail.
func isUTF7(charset string) bool {
	switch strings.ToLower(strings.TrimSpace(charset)) {
	case "utf-7", "utf7", "unicode-1-1-utf-7", "csunicode11utf7", "x-unicode-2-0-utf-7", "x-utf-7":
		return true
	}
	return false
}

// decodeUTF7 returns b, UTF-7 text (RFC 2152), as UTF-8. It never fails:
// what RFC 2152 calls ill-formed is read as a lenient reader would. A "+"
// that starts no shift sequence stays a "+", and a code unit left unpaired
// by a cut or a bad surrogate, or a byte over 0x7F, becomes U+FFFD.
func decodeUTF7(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '+' {
			if c >= utf8.RuneSelf {
				out.WriteRune(utf8.RuneError)
			} else {
				out.WriteByte(c)
			}
			i++
			continue
		}
		i++
		if i < len(b) && b[i] == '-' { // "+-" is a literal "+"
			out.WriteByte('+')
			i++
			continue
		}
		start := i
		for i < len(b) && base64Value(b[i]) >= 0 {
			i++
		}
		if i == start {
			out.WriteByte('+')
			continue
		}
		writeUTF16(&out, b[start:i])
		// RFC 2152: a "-" right after the base64 run is absorbed; any other
		// character ends the run and is itself text.
		if i < len(b) && b[i] == '-' {
			i++
		}
	}
	return out.String()
}

// writeUTF16 decodes run, modified base64 of big-endian UTF-16 code units,
// and writes the characters to out. Fewer than 6 bits left over at the end
// are padding; more are a code unit cut short, and give U+FFFD.
func writeUTF16(out *strings.Builder, run []byte) {
	var (
		bits  uint32
		nbits uint
		high  rune // a high surrogate waiting for its pair, or 0
	)
	for _, c := range run {
		bits = bits<<6 | uint32(base64Value(c))
		nbits += 6
		if nbits < 16 {
			continue
		}
		nbits -= 16
		unit := rune(bits >> nbits & 0xFFFF)
		bits &= 1<<nbits - 1
		switch {
		case high != 0 && utf16.IsSurrogate(unit) && unit >= 0xDC00:
			out.WriteRune(utf16.DecodeRune(high, unit))
			high = 0
			continue
		case high != 0:
			out.WriteRune(utf8.RuneError)
			high = 0
		}
		switch {
		case unit >= 0xD800 && unit < 0xDC00:
			high = unit
		case utf16.IsSurrogate(unit):
			out.WriteRune(utf8.RuneError)
		default:
			out.WriteRune(unit)
		}
	}
	if high != 0 || nbits >= 6 {
		out.WriteRune(utf8.RuneError)
	}
}

// base64Value returns the value of c in the base64 alphabet UTF-7 uses
// (RFC 2152 "Set B": the alphabet of RFC 2045 without the "=" pad), or -1.
func base64Value(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z':
		return int(c - 'A')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 26
	case '0' <= c && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}
