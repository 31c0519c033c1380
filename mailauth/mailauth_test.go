package mailauth

import (
	"context"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"burner/internal/dnstest"
	"burner/storage"

	"github.com/prometheus/client_golang/prometheus"
)

// exampleWorld serves example.test as spec §12's example has it: SPF for
// 192.0.2.0/24, DMARC p=reject, key s1, and a client whose PTR resolves
// back.
func exampleWorld(t testing.TB) *dnstest.Server {
	t.Helper()
	k := testKeys()
	z := dnstest.Start(t)
	z.Add(t,
		`example.test. 300 IN TXT "v=spf1 ip4:192.0.2.0/24 -all"`,
		`_dmarc.example.test. 300 IN TXT "v=DMARC1; p=reject"`,
		`10.2.0.192.in-addr.arpa. 300 IN PTR mail.example.test.`,
		`mail.example.test. 300 IN A 192.0.2.10`,
	)
	z.TXT("s1._domainkey.example.test", dnstest.KeyRecord(t, k.rsa))
	return z
}

func TestVerify(t *testing.T) {
	z := exampleWorld(t)
	reg := prometheus.NewRegistry()
	v := newTestVerifier(t, Options{Resolver: z.Addr, Hostname: "mx.burner.test", Metrics: reg}, nil)
	env := storage.Envelope{
		ClientIP: netip.MustParseAddr("192.0.2.10"),
		Helo:     "mail.example.test",
		TLS:      &storage.TLS{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256"},
		MailFrom: "bounce@example.test",
	}
	raw := dnstest.Sign(t, testMessage("a@example.test", "Hello.\r\n"), "example.test", "s1", testKeys().rsa)
	got := v.Verify(context.Background(), env, raw)
	want := storage.AuthResult{
		Status:   storage.AuthDone,
		Envelope: env,
		PTR:      "mail.example.test",
		FCrDNS:   true,
		SPF:      storage.SPFResult{Result: storage.AuthPass, Domain: "example.test"},
		DKIM:     []storage.DKIMResult{{Result: storage.AuthPass, Domain: "example.test", Selector: "s1"}},
		DMARC:    storage.DMARCResult{Result: storage.AuthPass, Domain: "example.test", Policy: "reject", SPFAligned: true, DKIMAligned: true},
		AuthenticationResults: "mx.burner.test; spf=pass smtp.mailfrom=example.test; dkim=pass header.d=example.test header.s=s1; " +
			"dmarc=pass header.from=example.test",
	}
	if !sameResult(got, want) {
		t.Errorf("Verify =\n%+v\nwant\n%+v", got, want)
	}
	m := gather(t, reg)
	for _, s := range []string{
		`burner_auth_results_total{method="spf",result="pass"}`,
		`burner_auth_results_total{method="dkim",result="pass"}`,
		`burner_auth_results_total{method="dmarc",result="pass"}`,
		`burner_auth_verify_seconds`,
	} {
		if m[s] != 1 {
			t.Errorf("%s = %v, want 1", s, m[s])
		}
	}
	if v, ok := m[`burner_auth_results_total{method="spf",result="permerror"}`]; !ok || v != 0 {
		t.Errorf("spf permerror = %v (present %v), want present at 0", v, ok)
	}
	if v, ok := m[`burner_auth_jobs_total{outcome="busy"}`]; !ok || v != 0 {
		t.Errorf("jobs busy = %v (present %v), want present at 0", v, ok)
	}
}

// gather returns the registry's series: counters by name{labels}, and
// each histogram's count by its name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			if h := m.GetHistogram(); h != nil {
				out[name] = float64(h.GetSampleCount())
			} else {
				out[name] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// sameResult compares AuthResults, the TLS pointer by value.
func sameResult(a, b storage.AuthResult) bool {
	if (a.Envelope.TLS == nil) != (b.Envelope.TLS == nil) || (a.Envelope.TLS != nil && *a.Envelope.TLS != *b.Envelope.TLS) {
		return false
	}
	a.Envelope.TLS, b.Envelope.TLS = nil, nil
	dk := sameDKIM(a.DKIM, b.DKIM)
	a.DKIM, b.DKIM = nil, nil
	return dk && a.Status == b.Status && a.Envelope == b.Envelope && a.PTR == b.PTR && a.FCrDNS == b.FCrDNS &&
		a.SPF == b.SPF && a.DMARC == b.DMARC && a.AuthenticationResults == b.AuthenticationResults
}

func TestVerifyAuthenticationResults(t *testing.T) {
	z := exampleWorld(t)
	z.Add(t, `helo.example.test. 300 IN TXT "v=spf1 -all"`)
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)
	unsigned := testMessage("a@example.test", "Hi.\r\n")
	for _, c := range []struct {
		name string
		env  storage.Envelope
		raw  []byte
		want string
	}{
		{"unsigned: dkim=none", envelope("192.0.2.10", "mail.example.test", "bounce@example.test"), unsigned,
			"mx.burner.test; spf=pass smtp.mailfrom=example.test; dkim=none; dmarc=pass header.from=example.test"},
		{"null sender: smtp.helo", envelope("198.51.100.1", "helo.example.test", ""), unsigned,
			"mx.burner.test; spf=fail smtp.helo=helo.example.test; dkim=none; dmarc=fail header.from=example.test"},
		{"a reason, quoted", envelope("192.0.2.10", "mail.example.test", "bounce@example.test"),
			dnstest.Sign(t, unsigned, "example.test", "gone", testKeys().ed),
			"mx.burner.test; spf=pass smtp.mailfrom=example.test; dkim=permerror reason=\"no key for signature: lookup gone._domainkey.example.test: no such host\" header.d=example.test header.s=gone; dmarc=pass header.from=example.test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := v.Verify(context.Background(), c.env, c.raw).AuthenticationResults; got != c.want {
				t.Errorf("Authentication-Results:\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestVerifyPTR(t *testing.T) {
	z := dnstest.Start(t)
	z.Add(t,
		`10.2.0.192.in-addr.arpa. 300 IN PTR mail.example.test.`,
		`mail.example.test. 300 IN A 192.0.2.10`,
		`20.2.0.192.in-addr.arpa. 300 IN PTR liar.example.test.`,
		`liar.example.test. 300 IN A 192.0.2.99`,
		`40.2.0.192.in-addr.arpa. 300 IN PTR first.example.test.`,
		`40.2.0.192.in-addr.arpa. 300 IN PTR second.example.test.`,
		`first.example.test. 300 IN A 192.0.2.41`,
		`second.example.test. 300 IN A 192.0.2.40`,
		`0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa. 300 IN PTR v6.example.test.`,
		`v6.example.test. 300 IN AAAA 2001:db8::10`,
		`1.0.0.127.in-addr.arpa. 300 IN PTR loopback.burner.test.`,
		`loopback.burner.test. 300 IN A 127.0.0.1`,
	)
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)
	for _, c := range []struct {
		ip     string
		ptr    string
		fcrdns bool
	}{
		{"192.0.2.10", "mail.example.test", true},
		{"192.0.2.20", "liar.example.test", false},
		{"192.0.2.30", "", false},
		{"192.0.2.40", "second.example.test", true},
		{"2001:db8::10", "v6.example.test", true},
		{"::ffff:192.0.2.10", "mail.example.test", true},
		{"127.0.0.1", "loopback.burner.test", true}, // the DNS server's, not /etc/hosts' "localhost"
	} {
		ptr, fcrdns := v.checkPTR(context.Background(), netip.MustParseAddr(c.ip))
		if ptr != c.ptr || fcrdns != c.fcrdns {
			t.Errorf("checkPTR(%s) = %q, %v; want %q, %v", c.ip, ptr, fcrdns, c.ptr, c.fcrdns)
		}
	}
	if ptr, fcrdns := v.checkPTR(context.Background(), netip.Addr{}); ptr != "" || fcrdns {
		t.Errorf("checkPTR(no address) = %q, %v; want nothing", ptr, fcrdns)
	}
}

// TestVerifyTimeout: a DNS server that never answers makes every verdict
// that needs it temperror, by the one deadline of the message.
func TestVerifyTimeout(t *testing.T) {
	addr, _ := dnstest.Blackhole(t)
	v := newTestVerifier(t, Options{Resolver: addr, Timeout: 300 * time.Millisecond}, nil)
	raw := dnstest.Sign(t, testMessage("a@example.test", "Hi.\r\n"), "example.test", "s1", testKeys().ed)
	got := v.Verify(context.Background(), envelope("192.0.2.10", "mail.example.test", "bounce@example.test"), raw)
	assertAllTempError(t, got, "i/o timeout")
}

// TestVerifyNoDNS: without a DNS server (no resolv.conf; a port that
// refuses) every verdict is temperror, without waiting for the deadline:
// the error says why, and it is not a timeout.
func TestVerifyNoDNS(t *testing.T) {
	raw := dnstest.Sign(t, testMessage("a@example.test", "Hi.\r\n"), "example.test", "s1", testKeys().ed)
	env := envelope("192.0.2.10", "mail.example.test", "bounce@example.test")
	opts := Options{Timeout: time.Hour}
	opts.resolvConf = filepath.Join(t.TempDir(), "resolv.conf")
	v := newTestVerifier(t, opts, nil)
	assertAllTempError(t, v.Verify(context.Background(), env, raw), "no DNS server")

	v = newTestVerifier(t, Options{Resolver: dnstest.ClosedPort(t), Timeout: time.Hour}, nil)
	assertAllTempError(t, v.Verify(context.Background(), env, raw), "DNS server unreachable")
}

func assertAllTempError(t *testing.T, got storage.AuthResult, why string) {
	t.Helper()
	if got.Status != storage.AuthDone || got.SPF.Result != storage.AuthTempError || got.DMARC.Result != storage.AuthTempError ||
		len(got.DKIM) != 1 || got.DKIM[0].Result != storage.AuthTempError || !strings.Contains(got.DKIM[0].Error, why) ||
		got.PTR != "" || got.FCrDNS || !strings.Contains(got.AuthenticationResults, why) {
		t.Errorf("Verify = %+v\nwant done, SPF, DKIM and DMARC temperror (%q), no PTR", got, why)
	}
}

// TestVerifyHostileInput: what a client may send: no header at all, a
// binary blob, a huge header field, an empty message. Verify answers.
func TestVerifyHostileInput(t *testing.T) {
	z := exampleWorld(t)
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)
	env := envelope("192.0.2.10", "mail.example.test", "bounce@example.test")
	for name, raw := range map[string][]byte{
		"empty":        nil,
		"blank line":   []byte("\r\n"),
		"binary":       {0, 1, 2, 0xff, '\n', ':', 0xfe, '\r', '\n', '\r', '\n', 0},
		"huge field":   []byte("DKIM-Signature: " + strings.Repeat("d=x;", 100000) + "\r\n\r\n"),
		"bare CR":      []byte("From: a@example.test\rDKIM-Signature: v=1\r\r\n"),
		"colon first":  []byte(": no name\r\nDKIM-Signature:\r\n\r\n"),
		"no From, sig": append([]byte("DKIM-Signature: v=1; a=rsa-sha256; d=example.test; s=s1; h=from; bh=; b=\r\n"), "\r\nHi\r\n"...),
	} {
		got := v.Verify(context.Background(), env, raw)
		if got.Status != storage.AuthDone || got.SPF.Result != storage.AuthPass || got.AuthenticationResults == "" {
			t.Errorf("Verify(%s) = %+v, want done, SPF pass", name, got)
		}
		for _, d := range got.DKIM {
			if d.Result == storage.AuthPass {
				t.Errorf("Verify(%s): a DKIM pass %+v", name, d)
			}
		}
	}
}
