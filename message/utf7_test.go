package message

import (
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestDecodeUTF7(t *testing.T) {
	tests := []struct{ in, want string }{
		// RFC 2152 §"Examples" and the shapes around them.
		{"A+ImIDkQ.", "A\u2262\u0391."},
		{"Hi Mom -+Jjo--!", "Hi Mom -\u263a-!"},
		{"+ZeVnLIqe-", "日本語"},
		{"Item 3 is +AKM-1.", "Item 3 is £1."},
		{"+-", "+"},
		{"1 +- 1", "1 + 1"},
		{"a+", "a+"},          // a "+" that starts nothing
		{"a+ b", "a+ b"},      // likewise
		{"+AOk", "é"},         // the run ends at the end
		{"+AOk.", "é."},       // a non-base64 character ends it and stays
		{"+AOkA6QDp-", "ééé"}, // several units in one run
		{"+2D3cAQ-", "🐁"},     // a surrogate pair
		{"+2D3cAQ", "🐁"},
		{"+2D0-", "\uFFFD"},     // a high surrogate alone
		{"+3AE-", "\uFFFD"},     // a low surrogate alone
		{"+2D0AQQ-", "\uFFFDA"}, // a high surrogate, then not a low one
		{"+AO-", "\uFFFD"},      // cut inside a code unit
		{"caf\xe9", "caf\uFFFD"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := decodeUTF7([]byte(tt.in)); got != tt.want {
			t.Errorf("decodeUTF7(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// encodeUTF7 encodes s as UTF-7 (RFC 2152), shifting every character
// outside printable ASCII, and "+" as "+-". Tests use it to build mail
// and to check decodeUTF7 against it.
func encodeUTF7(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var b strings.Builder
	var units []uint16
	flush := func(next byte) {
		if len(units) == 0 {
			return
		}
		b.WriteByte('+')
		var bits uint32
		var n uint
		for _, u := range units {
			bits = bits<<16 | uint32(u)
			n += 16
			for n >= 6 {
				n -= 6
				b.WriteByte(alphabet[bits>>n&63])
			}
		}
		if n > 0 {
			b.WriteByte(alphabet[bits<<(6-n)&63])
		}
		if next == '-' || base64Value(next) >= 0 || next == 0 {
			b.WriteByte('-')
		}
		units = units[:0]
	}
	for i, r := range s {
		if r >= 0x20 && r < 0x7f && r != '+' || r == '\r' || r == '\n' || r == '\t' {
			flush(s[i])
			b.WriteRune(r)
			continue
		}
		if r == '+' && len(units) == 0 {
			b.WriteString("+-")
			continue
		}
		units = utf16.AppendRune(units, r)
	}
	flush(0)
	return b.String()
}

func FuzzUTF7(f *testing.F) {
	for _, s := range []string{"", "Hi Mom -☺-!", "日本語", "a+b", "🐁 and 🐈", "x+-y", "é-", "\x00\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		enc := encodeUTF7(s)
		if got := decodeUTF7([]byte(enc)); got != s {
			t.Fatalf("decodeUTF7(encodeUTF7(%q) = %q) = %q", s, enc, got)
		}
		// Any input decodes to valid UTF-8.
		if got := decodeUTF7([]byte(s)); !utf8.ValidString(got) {
			t.Fatalf("decodeUTF7(%q) = %q, not valid UTF-8", s, got)
		}
	})
}
