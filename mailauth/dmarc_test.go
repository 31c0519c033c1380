package mailauth

import (
	"context"
	"testing"

	"burner/internal/dnstest"
	"burner/storage"
)

func TestDMARC(t *testing.T) {
	k := testKeys()
	z := dnstest.Start(t)
	spfPass := `"v=spf1 ip4:192.0.2.0/24 -all"`
	for _, d := range []string{"example.test", "mail.example.test", "esp.test", "none.test", "none-policy.test", "quarantine.test", "strict.test", "mail.strict.test", "broken.test"} {
		z.Add(t, d+`. 300 IN TXT `+spfPass)
		z.TXT("s1._domainkey."+d, dnstest.KeyRecord(t, k.ed))
	}
	z.Add(t,
		`_dmarc.example.test. 300 IN TXT "v=DMARC1; p=reject; sp=quarantine; rua=mailto:dmarc@example.test"`,
		`_dmarc.none-policy.test. 300 IN TXT "v=DMARC1; p=none"`,
		`_dmarc.quarantine.test. 300 IN TXT "v=DMARC1; p=quarantine"`,
		`_dmarc.strict.test. 300 IN TXT "v=DMARC1; p=reject; aspf=s; adkim=s"`,
		`_dmarc.broken.test. 300 IN TXT "v=DMARC1; p=bogus"`,
		`_dmarc.flaky.test. 300 IN TXT "v=DMARC1; p=reject"`,
		`flaky.test. 300 IN TXT "v=spf1 include:down.test -all"`,
		`_dmarc.esp.test. 300 IN TXT "v=DMARC1; p=none"`,
	)
	z.Fail("down.test")
	z.Fail("_dmarc.down.test")
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)

	signed := func(from, d string) []byte {
		return dnstest.Sign(t, testMessage(from, "Hello.\r\n"), d, "s1", k.ed)
	}
	want := func(r storage.AuthValue, domain, policy string, spfAligned, dkimAligned bool) storage.DMARCResult {
		return storage.DMARCResult{Result: r, Domain: domain, Policy: policy, SPFAligned: spfAligned, DKIMAligned: dkimAligned}
	}
	const reject, quarantine, none = "reject", "quarantine", "none"
	for _, c := range []struct {
		name     string
		mailFrom string
		raw      []byte
		want     storage.DMARCResult
	}{
		{"pass by SPF alone", "bounce@example.test", testMessage("a@example.test", "Hi.\r\n"),
			want(storage.AuthPass, "example.test", reject, true, false)},
		{"pass by DKIM alone", "bounce@esp.test", signed("a@example.test", "example.test"),
			want(storage.AuthPass, "example.test", reject, false, true)},
		{"pass by both", "bounce@example.test", signed("a@example.test", "example.test"),
			want(storage.AuthPass, "example.test", reject, true, true)},
		{"fail, p=none", "bounce@esp.test", signed("a@none-policy.test", "esp.test"),
			want(storage.AuthFail, "none-policy.test", none, false, false)},
		{"fail, p=quarantine", "bounce@esp.test", signed("a@quarantine.test", "esp.test"),
			want(storage.AuthFail, "quarantine.test", quarantine, false, false)},
		{"fail, p=reject", "bounce@esp.test", signed("a@example.test", "esp.test"),
			want(storage.AuthFail, "example.test", reject, false, false)},
		{"fail, SPF passed for another domain, DKIM failed", "bounce@esp.test", append(signed("a@example.test", "example.test"), "altered\r\n"...),
			want(storage.AuthFail, "example.test", reject, false, false)},
		{"relaxed: subdomains align", "bounce@mail.example.test", signed("a@example.test", "mail.example.test"),
			want(storage.AuthPass, "example.test", reject, true, true)},
		{"strict: subdomains do not align", "bounce@mail.strict.test", signed("a@strict.test", "mail.strict.test"),
			want(storage.AuthFail, "strict.test", reject, false, false)},
		{"strict: the same name aligns", "bounce@mail.strict.test", signed("a@strict.test", "strict.test"),
			want(storage.AuthPass, "strict.test", reject, false, true)},
		{"the organizational domain's record, its sp=", "bounce@example.test", testMessage("a@news.Example.TEST", "Hi.\r\n"),
			want(storage.AuthPass, "news.example.test", quarantine, true, false)},
		{"null sender: the HELO name aligns", "", testMessage("a@example.test", "Hi.\r\n"),
			want(storage.AuthPass, "example.test", reject, true, false)},
		{"none: no record, alignment relaxed", "bounce@none.test", testMessage("a@none.test", "Hi.\r\n"),
			want(storage.AuthNone, "none.test", "", true, false)},
		{"permerror: a broken record", "bounce@broken.test", testMessage("a@broken.test", "Hi.\r\n"),
			want(storage.AuthPermError, "broken.test", "", true, false)},
		{"permerror: no From", "bounce@example.test", []byte("Subject: anonymous\r\n\r\nHi.\r\n"),
			want(storage.AuthPermError, "", "", false, false)},
		{"permerror: From of two domains", "bounce@example.test", []byte("From: a@example.test, b@esp.test\r\n\r\nHi.\r\n"),
			want(storage.AuthPermError, "", "", false, false)},
		{"temperror: the record's lookup", "bounce@example.test", testMessage("a@down.test", "Hi.\r\n"),
			want(storage.AuthTempError, "down.test", "", false, false)},
		{"temperror: SPF was, and nothing passed", "bounce@flaky.test", testMessage("a@flaky.test", "Hi.\r\n"),
			want(storage.AuthTempError, "flaky.test", reject, false, false)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := v.Verify(context.Background(), envelope("192.0.2.10", "mail.example.test", c.mailFrom), c.raw)
			if got.DMARC != c.want {
				t.Errorf("Verify: DMARC %+v, want %+v (SPF %+v, DKIM %+v)", got.DMARC, c.want, got.SPF, got.DKIM)
			}
		})
	}
}

func TestFromDomain(t *testing.T) {
	for _, c := range []struct {
		from []string
		want string
	}{
		{[]string{"a@Example.TEST"}, "example.test"},
		{[]string{`"Doe, Jane" <jane@example.test>`}, "example.test"},
		{[]string{`=?iso-2022-jp?B?GyRCJUYlOSVIGyhC?= <a@example.test>`}, "example.test"},
		{[]string{`Doe, Jane <jane@example.test>`}, "example.test"}, // net/mail refuses the unquoted comma
		{[]string{`Jane Q. Doe <jane@example.test.>`}, "example.test"},
		{[]string{"a@example.test, b@example.test"}, "example.test"},
		{[]string{"a@example.test, b@other.test"}, ""},
		{[]string{"a@example.test", "b@example.test"}, ""},
		{[]string{"a@[192.0.2.1]"}, ""},
		{[]string{"undisclosed-recipients:;"}, ""},
		{nil, ""},
	} {
		got, err := fromDomain(c.from)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("fromDomain(%q) = %q, %v; want %q", c.from, got, err, c.want)
		}
	}
}
