package message

import (
	"maps"
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

func TestFirstMailbox(t *testing.T) {
	tests := []struct {
		in, addr, name string
		ok             bool
	}{
		{"Ann <ann@example.test>", "ann@example.test", "Ann", true},
		{"ann@example.test", "ann@example.test", "", true},
		{"\"Doe, Jane\" <jane@example.test>", "jane@example.test", "Doe, Jane", true},
		// RFC 5322 Appendix A.5.
		{`Pete(A wonderful \) chap) <pete(his account)@silly.test(his host)>`, "pete@silly.test", "Pete", true},
		{"A Group(Some people)\r\n     :Chris Jones <c@(Chris's host.)public.example>,\r\n         joe@example.org;", "c@public.example", "Chris Jones", true},
		// Raw 8-bit names: UTF-8 when valid, else Windows-1252.
		{"\"M\xfcller, Hans\" <hans@example.test>", "hans@example.test", "Müller, Hans", true},
		{"\"Müller, Hans\" <hans@example.test>", "hans@example.test", "Müller, Hans", true},
		{"M\xfcller <hans@example.test>", "hans@example.test", "Müller", true},
		// An encoded name keeps what it cannot decode.
		{"=?x-unknown?Q?Hans?= <hans@example.test>", "hans@example.test", "=?x-unknown?Q?Hans?=", true},
		{"=?utf-8?Q?Ren=C3=A9e?= =?x-unknown?Q?D?= <r@example.test>", "r@example.test", "Renée =?x-unknown?Q?D?=", true},
		{"=?iso-8859-1?Q?J=FCrgen_M\xfcller?= <j@example.test>", "j@example.test", "Jürgen Müller", true},
		{"\"=?utf-8?q?M=C3=BCller?=\" <m@example.test>", "m@example.test", "Müller", true},
		// Old forms.
		{"jdoe@example.test (John Doe)", "jdoe@example.test", "John Doe", true},
		{"jdoe@example.test (=?utf-8?q?J=C3=B6rg?=)", "jdoe@example.test", "Jörg", true},
		{"Ann ann@example.test", "ann@example.test", "Ann", true},
		{"<@relay.test,@other.test:route@example.test>", "route@example.test", "", true},
		{"john . doe @ example . test", "john.doe@example.test", "", true},
		{"Pat (the boss) <pat@example.test>", "pat@example.test", "Pat", true},
		{"Ann <ann@example.test", "ann@example.test", "Ann", true},
		{"\"pat doe\"@example.test", `"pat doe"@example.test`, "", true},
		{"\"pat\"@example.test", "pat@example.test", "", true},
		{"Jörg <jörg@exämple.test>", "jörg@exämple.test", "Jörg", true},
		{"<ann@[192.0.2.1]>", "ann@[192.0.2.1]", "", true},
		// The first mailbox that has an address.
		{"a@example.test, Bob <b@example.test>", "a@example.test", "", true},
		{"undisclosed-recipients:;, real@example.test", "real@example.test", "", true},
		{", ann@example.test", "ann@example.test", "", true},
		// None.
		{"", "", "", false},
		{"undisclosed-recipients:;", "", "", false},
		{"Ann <ann@", "", "", false},
		{"Broken <not an address", "", "", false},
		{"<<>>", "", "", false},
		{"<>", "", "", false},
		{"ann", "", "", false},
		{"<pat doe@example.test>", "", "", false},
		{"<a@b@example.test>", "", "", false},
	}
	for _, tt := range tests {
		addr, name, ok := firstMailbox(tt.in)
		if addr != tt.addr || name != tt.name || ok != tt.ok {
			t.Errorf("firstMailbox(%q) = %q, %q, %v, want %q, %q, %v", tt.in, addr, name, ok, tt.addr, tt.name, tt.ok)
		}
	}
}

func TestParseMediaType(t *testing.T) {
	tests := []struct {
		in     string
		typ    string
		params map[string]string
		ok     bool
	}{
		{"text/plain", "text/plain", nil, true},
		{"TEXT/HTML; CHARSET=UTF-8", "text/html", map[string]string{"charset": "UTF-8"}, true},
		{`multipart/mixed; boundary="a;b \"c\""`, "multipart/mixed", map[string]string{"boundary": `a;b "c"`}, true},
		{"text/plain; charset=us-ascii (Plain text)", "text/plain", map[string]string{"charset": "us-ascii"}, true},
		{"text/plain (a comment); charset = \"iso-8859-1\" ", "text/plain", map[string]string{"charset": "iso-8859-1"}, true},
		{"text/html; charset=utf-8; charset=latin1", "text/html", map[string]string{"charset": "utf-8"}, true},
		{"text/plain; ; junk; charset=utf-8", "text/plain", map[string]string{"charset": "utf-8"}, true},
		// RFC 2231, in charsets Go's mime package does not decode.
		{"multipart/mixed; boundary*=iso-8859-1''XYZ", "multipart/mixed", map[string]string{"boundary": "XYZ"}, true},
		{"multipart/mixed; boundary*=ansi-x3.4-1968'en'%3D_p%3D", "multipart/mixed", map[string]string{"boundary": "=_p="}, true},
		{"multipart/mixed; boundary*0*=utf-8''b1%5F; boundary*1=\"two\"; boundary*2*=%5Fend", "multipart/mixed", map[string]string{"boundary": "b1_two_end"}, true},
		{"application/pdf; name=old.pdf; name*=iso-8859-1''R%E9sum%E9.pdf", "application/pdf", map[string]string{"name": "Résumé.pdf"}, true},
		{"application/pdf; name*1*=%E9.pdf; name*0*=windows-1252''R%E9sum", "application/pdf", map[string]string{"name": "Résumé.pdf"}, true},
		{"application/pdf; name*0*=x-unknown''caf%C3%A9", "application/pdf", map[string]string{"name": "café"}, true},
		{"text/plain; charset*=us-ascii'en'iso-8859-2", "text/plain", map[string]string{"charset": "iso-8859-2"}, true},
		{"text/plain; title*=us-ascii'en-us'This%20is%20%2A%2A%2Afun%2A%2A%2A", "text/plain", map[string]string{"title": "This is ***fun***"}, true},
		{"garbage", "", nil, false},
		{"text/", "", nil, false},
		{"text/plain/x", "", nil, false},
		{"", "", nil, false},
	}
	for _, tt := range tests {
		typ, params, ok := parseMediaType(tt.in)
		if typ != tt.typ || !maps.Equal(params, tt.params) || ok != tt.ok {
			t.Errorf("parseMediaType(%q) = %q, %q, %v, want %q, %q, %v", tt.in, typ, params, ok, tt.typ, tt.params, tt.ok)
		}
	}
}

// TestParseDisposition checks that a Content-Disposition's parameters are
// read as a Content-Type's are, RFC 2231 and all.
func TestParseDisposition(t *testing.T) {
	for _, tt := range []struct {
		in     string
		disp   string
		params map[string]string
	}{
		{"", "", nil},
		{"inline", "inline", nil},
		{`ATTACHMENT; filename="a b.pdf"`, "attachment", map[string]string{"filename": "a b.pdf"}},
		{"attachment (a comment); filename*=UTF-8''r%C3%A9sum%C3%A9.txt", "attachment", map[string]string{"filename": "résumé.txt"}},
		{"attachment; filename*0=\"long\"; filename*1=\".txt\"", "attachment", map[string]string{"filename": "long.txt"}},
	} {
		disp, params := parseDisposition(tt.in)
		if disp != tt.disp || !maps.Equal(params, tt.params) {
			t.Errorf("parseDisposition(%q) = %q, %q; want %q, %q", tt.in, disp, params, tt.disp, tt.params)
		}
	}
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
