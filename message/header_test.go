package message

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeHeader(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"=?utf-8?q?caf=C3=A9?=", "café"},
		{"=?UTF-8?B?Y2Fmw6k=?=", "café"},
		{"=?utf-8?b?Y2Fmw6k?=", "café"}, // padding left out
		{"=?utf-8?q?a?= =?utf-8?q?b?=", "ab"},
		{"=?utf-8?q?a?=\t =?utf-8?q?b?= c", "ab c"},
		{"=?utf-8?Q?=C3?= =?utf-8?Q?=A9?=", "é"}, // a character split between words
		{"=?iso-8859-1?q?=E9?= =?utf-8?q?=C3=A9?=", "éé"},
		{"Re: =?utf-8?q?caf=C3=A9?= [list]", "Re: café [list]"},
		{"foo=?utf-8?q?bar?=", "foobar"},
		// An 8-bit byte in a Q word is a byte of the word's charset.
		{"=?iso-8859-1?Q?Die_Hasen_und_die_Fr\xf6sche?=", "Die Hasen und die Frösche"},
		{"=?utf-8?Q?Gr\xc3\xbc\xc3\x9fe?=", "Grüße"},
		// An undecodable word stays as written; the rest is decoded.
		{"=?utf-8?Q?caf=C3=A9?= and =?x-unknown?Q?abc?=", "café and =?x-unknown?Q?abc?="},
		{"=?utf-8?q?a?= =?x-unknown?q?b?= =?utf-8?q?c?=", "a =?x-unknown?q?b?= c"},
		{"=?utf-8?B?@@@?= =?utf-8?q?ok?=", "=?utf-8?B?@@@?= ok"},
		{"=?utf-8?X?abc?=", "=?utf-8?X?abc?="},
		// RFC 2231 §5: a language after the charset.
		{"=?iso-8859-2*sl?Q?Doma=e8e?=", "Domače"},
		{"=?US-ASCII*EN?Q?Keith_Moore?=", "Keith Moore"},
		{"=?utf-7?Q?Gr+APwA3w-e?=", "Grüße"},
		{"=?unicode-1-1-utf-7?B?K1plVm5MSXFlLQ==?=", "日本語"},
		// ISO-8859-1 is read as Windows-1252, as browsers read it.
		{"=?iso-8859-1?q?=80_5?=", "€ 5"},
		{"=?utf-8?q?=FF?=", "\uFFFD"},
		{"=?us-ascii?q?caf=E9?=", "café"},
		// Raw bytes: UTF-8 when valid, else Windows-1252.
		{"Gr\xfc\xdfe", "Grüße"},
		{"Grüße", "Grüße"},
		{"\x93quoted\x94 =?utf-8?q?=E2=82=AC?=", "“quoted” €"},
		{"=?utf-8?q?a b?=", "a b"}, // a space its sender did not encode
		{"=?utf-8?q?what=3F?=", "what?"},
		{"a =? b", "a =? b"},
		{"=?utf-8?q?unterminated", "=?utf-8?q?unterminated"},
		{"=?=?utf-8?q?x?=", "=?x"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := decodeHeader(tt.in); got != tt.want {
			t.Errorf("decodeHeader(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzDecodeHeader(f *testing.F) {
	for _, s := range []string{"=?utf-8?q?caf=C3=A9?= x", "=?iso-8859-1?Q?Fr\xf6sche?=", "=?x?q?a?= =?utf-7?b?K1pl?=", "Gr\xfc\xdfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := decodeHeader(s); !utf8.ValidString(got) {
			t.Fatalf("decodeHeader(%q) = %q, not valid UTF-8", s, got)
		}
		addr, name, _ := firstMailbox(s)
		if !utf8.ValidString(addr) || !utf8.ValidString(name) {
			t.Fatalf("firstMailbox(%q) = %q, %q, not valid UTF-8", s, addr, name)
		}
	})
}

// TestDecodeHostileHeaders parses headers built to make a careless
// decoder quadratic: many broken encoded words, and many colons after an
// address has begun. At 300 KiB each, quadratic work would take hours and
// time the test out; linear work takes milliseconds.
func TestDecodeHostileHeaders(t *testing.T) {
	const size = 300 << 10
	for _, unit := range []string{"=?a?q?", "=?utf-8?q?x", "@:", "(", "<@", "=?utf-8?b?=?="} {
		v := strings.Repeat(unit, size/len(unit))
		raw := "From: " + v + "\r\nSubject: " + v + "\r\nContent-Type: text/plain; a*0*=" + v + "\r\n\r\nbody\r\n"
		m, err := New(0).Parse([]byte(raw), "bounce@example.test")
		if err != nil {
			t.Fatalf("parse(%q × %d) returned error %v", unit, size/len(unit), err)
		}
		if m.Subject == nil || !utf8.ValidString(*m.Subject) || m.Body == nil {
			t.Errorf("parse(%q × %d) Subject, Body = %.40s, %s, want valid text", unit, size/len(unit), show(m.Subject), show(m.Body))
		}
	}
}
