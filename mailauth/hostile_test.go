package mailauth

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"burner/internal/dnstest"
	"burner/storage"

	"github.com/miekg/dns"
)

// hostileWorld serves hostile.test: an SPF record of 30 includes (each
// of another "v=spf1 -all" record, so evaluation would go on to the next)
// and DMARC p=reject. The message carries 50 DKIM signatures, each of
// its own selector, all with keys published.
func hostileWorld(t testing.TB) (*dnstest.Server, []byte) {
	t.Helper()
	k := testKeys()
	z := dnstest.Start(t)
	var incs []string
	for i := 1; i <= 30; i++ {
		incs = append(incs, fmt.Sprintf("include:i%d.hostile.test", i))
		z.Add(t, fmt.Sprintf(`i%d.hostile.test. 300 IN TXT "v=spf1 -all"`, i))
	}
	z.Add(t,
		`hostile.test. 300 IN TXT "v=spf1 `+strings.Join(incs, " ")+` -all"`,
		`_dmarc.hostile.test. 300 IN TXT "v=DMARC1; p=reject"`,
	)
	raw := testMessage("a@hostile.test", "Hi.\r\n")
	for i := 1; i <= 50; i++ {
		sel := fmt.Sprintf("s%d", i)
		z.TXT(sel+"._domainkey.hostile.test", dnstest.KeyRecord(t, k.ed))
		raw = dnstest.Sign(t, raw, "hostile.test", sel, k.ed)
	}
	return z, raw
}

// TestHostileBounded: 50 signatures and 30 includes cost 5 key lookups
// and 11 SPF lookups: the work of one message is bounded whatever it
// carries (spec §12).
func TestHostileBounded(t *testing.T) {
	z, raw := hostileWorld(t)
	if n := bytes.Count(raw, []byte("DKIM-Signature:")); n != 50 {
		t.Fatalf("the message has %d signatures, want 50", n)
	}
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)
	r := v.Verify(context.Background(), envelope("192.0.2.10", "client.test", "a@hostile.test"), raw)

	if r.SPF.Result != storage.AuthPermError || len(r.DKIM) != 50 || r.DMARC.Result != storage.AuthPass {
		t.Errorf("Verify = SPF %s, %d DKIM, DMARC %s; want permerror (lookup limit), 50, pass by DKIM", r.SPF.Result, len(r.DKIM), r.DMARC.Result)
	}
	passed := 0
	for i, d := range r.DKIM {
		switch {
		case d.Result == storage.AuthPass:
			passed++
		case d.Result != storage.AuthPermError || d.Error != "too many signatures":
			t.Errorf("signature %d: %+v, want pass or permerror too many signatures", i+1, d)
		}
	}
	if passed != 5 {
		t.Errorf("%d signatures passed, want 5 (the ones verified)", passed)
	}

	keys, spfs := 0, 0
	for k, n := range z.Asks("hostile.test.") {
		switch {
		case strings.HasSuffix(k.Name, "._domainkey.hostile.test."):
			keys += n
		case k.Name == "hostile.test." || strings.HasPrefix(k.Name, "i"):
			spfs += n
		}
	}
	if keys != 5 || spfs != 11 {
		t.Errorf("the server was asked %d key records and %d SPF records; want 5 (the signatures verified) and 11 (the record and 10 includes)", keys, spfs)
	}
	all, _ := z.Total()
	// And the rest: _dmarc, the PTR of the client.
	if want := 5 + 11 + 1 + 1; all != want {
		t.Errorf("the server was asked %d questions in all, want %d", all, want)
	}
	if n := z.Count("_dmarc.hostile.test", dns.TypeTXT); n != 1 {
		t.Errorf("_dmarc asked %d times, want 1", n)
	}
}

// BenchmarkVerify: a message signed with RSA-2048, its answers cached
// after the first: the CPU and allocations of one verification.
func BenchmarkVerify(b *testing.B) {
	z := exampleWorld(b)
	v := newTestVerifier(b, Options{Resolver: z.Addr}, nil)
	env := envelope("192.0.2.10", "mail.example.test", "bounce@example.test")
	raw := dnstest.Sign(b, testMessage("a@example.test", strings.Repeat("A line of a normal message body.\r\n", 100)), "example.test", "s1", testKeys().rsa)
	b.ReportAllocs()
	for b.Loop() {
		if r := v.Verify(context.Background(), env, raw); r.DMARC.Result != storage.AuthPass {
			b.Fatalf("DMARC %s", r.DMARC.Result)
		}
	}
}

// BenchmarkVerifyUnsigned: the common case, an unsigned 4 KB message,
// its answers cached: SPF, DMARC and the PTR, no key and no signature.
func BenchmarkVerifyUnsigned(b *testing.B) {
	z := exampleWorld(b)
	v := newTestVerifier(b, Options{Resolver: z.Addr}, nil)
	env := envelope("192.0.2.10", "mail.example.test", "bounce@example.test")
	raw := testMessage("a@example.test", strings.Repeat("A line of a normal message body.\r\n", 120))
	b.ReportAllocs()
	for b.Loop() {
		if r := v.Verify(context.Background(), env, raw); r.DMARC.Result != storage.AuthPass {
			b.Fatalf("DMARC %s", r.DMARC.Result)
		}
	}
}

// BenchmarkVerifyHostile: 50 signatures and 30 includes, answers cached.
func BenchmarkVerifyHostile(b *testing.B) {
	z, raw := hostileWorld(b)
	v := newTestVerifier(b, Options{Resolver: z.Addr}, nil)
	env := envelope("192.0.2.10", "client.test", "a@hostile.test")
	b.ReportAllocs()
	for b.Loop() {
		if r := v.Verify(context.Background(), env, raw); r.SPF.Result != storage.AuthPermError {
			b.Fatalf("SPF %s", r.SPF.Result)
		}
	}
}
