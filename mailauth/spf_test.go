package mailauth

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"burner/internal/dnstest"
	"burner/storage"

	"github.com/miekg/dns"
)

func TestSPF(t *testing.T) {
	z := dnstest.Start(t)
	z.Add(t,
		`pass.test. 300 IN TXT "v=spf1 ip4:192.0.2.0/24 -all"`,
		`fail.test. 300 IN TXT "v=spf1 ip4:198.51.100.1 -all"`,
		`softfail.test. 300 IN TXT "v=spf1 ~all"`,
		`neutral.test. 300 IN TXT "v=spf1 ?all"`,
		`empty.test. 300 IN TXT "v=spf1"`,
		`nospf.test. 300 IN TXT "google-site-verification=abc"`,
		`broken.test. 300 IN TXT "v=spf1 frobnicate ip4:192.0.2.0/24 -all"`,
		`two.test. 300 IN TXT "v=spf1 -all"`,
		`two.test. 300 IN TXT "v=spf1 +all"`,
		`include.test. 300 IN TXT "v=spf1 include:pass.test -all"`,
		`mx.test. 300 IN TXT "v=spf1 mx -all"`,
		`mx.test. 300 IN MX 10 mail.mx.test.`,
		`mail.mx.test. 300 IN A 192.0.2.10`,
		`a.test. 300 IN TXT "v=spf1 a:host.a.test -all"`,
		`host.a.test. 300 IN AAAA 2001:db8::10`,
		`void.test. 300 IN TXT "v=spf1 a:nx1.void.test a:nx2.void.test a:nx3.void.test -all"`,
		`helo.test. 300 IN TXT "v=spf1 ip4:192.0.2.10 -all"`,
		`temp.test. 300 IN TXT "v=spf1 include:servfail.test -all"`,
	)
	z.Fail("servfail.test")
	z.Fail("down.test")
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)

	for _, c := range []struct {
		name   string
		env    storage.Envelope
		want   storage.AuthValue
		domain string
		whyHas string // a word the reason must hold
	}{
		{"pass", envelope("192.0.2.10", "client.test", "bounce@pass.test"), storage.AuthPass, "pass.test", ""},
		{"fail", envelope("192.0.2.10", "client.test", "bounce@fail.test"), storage.AuthFail, "fail.test", ""},
		{"softfail", envelope("192.0.2.10", "client.test", "bounce@softfail.test"), storage.AuthSoftFail, "softfail.test", ""},
		{"neutral", envelope("192.0.2.10", "client.test", "bounce@neutral.test"), storage.AuthNeutral, "neutral.test", ""},
		{"neutral, empty record", envelope("192.0.2.10", "client.test", "bounce@empty.test"), storage.AuthNeutral, "empty.test", ""},
		{"none, no record", envelope("192.0.2.10", "client.test", "bounce@nospf.test"), storage.AuthNone, "nospf.test", ""},
		{"none, no domain", envelope("192.0.2.10", "client.test", "bounce@nx.test"), storage.AuthNone, "nx.test", ""},
		{"none, single label", envelope("192.0.2.10", "client.test", "bounce@localhost"), storage.AuthNone, "localhost", ""},
		{"permerror, broken record", envelope("192.0.2.10", "client.test", "bounce@broken.test"), storage.AuthPermError, "broken.test", "unknown field"},
		{"permerror, two records", envelope("192.0.2.10", "client.test", "bounce@two.test"), storage.AuthPermError, "two.test", "multiple"},
		{"permerror, void lookups", envelope("192.0.2.10", "client.test", "bounce@void.test"), storage.AuthPermError, "void.test", "void lookup"},
		{"temperror, include SERVFAIL", envelope("192.0.2.10", "client.test", "bounce@temp.test"), storage.AuthTempError, "temp.test", "SERVFAIL"},
		{"temperror, SERVFAIL", envelope("192.0.2.10", "client.test", "bounce@down.test"), storage.AuthTempError, "down.test", "SERVFAIL"},
		{"pass, include", envelope("192.0.2.10", "client.test", "bounce@include.test"), storage.AuthPass, "include.test", ""},
		{"pass, mx", envelope("192.0.2.10", "client.test", "bounce@MX.test"), storage.AuthPass, "mx.test", ""},
		{"fail, mx", envelope("192.0.2.11", "client.test", "bounce@mx.test"), storage.AuthFail, "mx.test", ""},
		{"pass, a over IPv6", envelope("2001:db8::10", "client.test", "bounce@a.test"), storage.AuthPass, "a.test", ""},
		{"pass, IPv4-mapped client", envelope("::ffff:192.0.2.10", "client.test", "bounce@pass.test"), storage.AuthPass, "pass.test", ""},
		{"null sender: HELO pass", envelope("192.0.2.10", "helo.test", ""), storage.AuthPass, "helo.test", ""},
		{"null sender: HELO fail", envelope("192.0.2.11", "HELO.test.", ""), storage.AuthFail, "helo.test", ""},
		{"null sender: address literal", envelope("192.0.2.10", "[192.0.2.10]", ""), storage.AuthNone, "", ""},
		{"no client address", envelope("", "client.test", "bounce@pass.test"), storage.AuthPermError, "pass.test", "client address"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := v.checkSPF(context.Background(), c.env)
			if got.Result != c.want || got.Domain != c.domain || !strings.Contains(why, c.whyHas) {
				t.Errorf("checkSPF(%+v) = %+v, %q; want %s for %q, the reason holding %q", c.env, got, why, c.want, c.domain, c.whyHas)
			}
		})
	}
}

// TestSPFLookupLimit: RFC 7208 §4.6.4's ten DNS-querying mechanisms, then
// permerror, without asking for more.
func TestSPFLookupLimit(t *testing.T) {
	z := dnstest.Start(t)
	var incs []string
	for i := 1; i <= 30; i++ {
		incs = append(incs, fmt.Sprintf("include:i%d.limit.test", i))
		z.Add(t, fmt.Sprintf(`i%d.limit.test. 300 IN TXT "v=spf1 -all"`, i))
	}
	z.Add(t, `limit.test. 300 IN TXT "v=spf1 `+strings.Join(incs, " ")+` ip4:192.0.2.10 -all"`)
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)
	got, why := v.checkSPF(context.Background(), envelope("192.0.2.10", "client.test", "a@limit.test"))
	if got.Result != storage.AuthPermError || !strings.Contains(why, "lookup limit") {
		t.Errorf("checkSPF with 30 includes = %+v, %q; want permerror, lookup limit reached", got, why)
	}
	asked := z.Asks("limit.test.")
	if n := len(asked); n != 11 {
		t.Errorf("the server was asked %d names, want 11 (the record, then 10 includes): %v", n, asked)
	}
	for k, n := range asked {
		if n != 1 || k.Type != dns.TypeTXT {
			t.Errorf("asked %s type %d %d times, want TXT once", k.Name, k.Type, n)
		}
	}
}
