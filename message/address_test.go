package message

import "testing"

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
