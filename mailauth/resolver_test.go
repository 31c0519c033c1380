package mailauth

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"burner/internal/dnstest"

	"github.com/miekg/dns"
)

// clock is a settable clock for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func TestResolverAnswers(t *testing.T) {
	z := dnstest.Start(t)
	z.Add(t,
		`multi.test. 300 IN TXT "v=spf1 " "-all"`,
		`multi.test. 300 IN TXT "second"`,
		`mail.test. 300 IN MX 10 mx1.mail.test.`,
		`mail.test. 300 IN MX 20 mx2.mail.test.`,
		`host.test. 300 IN A 192.0.2.1`,
		`host.test. 300 IN AAAA 2001:db8::1`,
		`v4only.test. 300 IN A 192.0.2.2`,
		`alias.test. 300 IN CNAME target.test.`,
		`target.test. 300 IN TXT "at the target"`,
		`1.2.0.192.in-addr.arpa. 300 IN PTR host.test.`,
	)
	r := newResolver(z.Addr, "", time.Now)
	ctx := context.Background()

	txts, err := r.LookupTXT(ctx, "Multi.Test")
	slices.Sort(txts)
	if err != nil || !slices.Equal(txts, []string{"second", "v=spf1 -all"}) {
		t.Errorf("LookupTXT(multi.test) = %q, %v; want the two records, the strings of each joined", txts, err)
	}
	mxs, err := r.LookupMX(ctx, "mail.test")
	if err != nil || len(mxs) != 2 || mxs[0].Host != "mx1.mail.test." || mxs[0].Pref != 10 {
		t.Errorf("LookupMX(mail.test) = %v, %v", mxs, err)
	}
	addrs, err := r.LookupIPAddr(ctx, "host.test.")
	if err != nil || len(addrs) != 2 || !addrs[0].IP.Equal(net.ParseIP("192.0.2.1")) || !addrs[1].IP.Equal(net.ParseIP("2001:db8::1")) {
		t.Errorf("LookupIPAddr(host.test) = %v, %v; want its A and AAAA", addrs, err)
	}
	addrs, err = r.LookupIPAddr(ctx, "v4only.test")
	if err != nil || len(addrs) != 1 {
		t.Errorf("LookupIPAddr(v4only.test) = %v, %v; want its one A (no AAAA is no error)", addrs, err)
	}
	txts, err = r.LookupTXT(ctx, "alias.test")
	if err != nil || !slices.Equal(txts, []string{"at the target"}) {
		t.Errorf("LookupTXT(alias.test) = %q, %v; want the CNAME's target's", txts, err)
	}
	names, err := r.LookupAddr(ctx, "192.0.2.1")
	if err != nil || !slices.Equal(names, []string{"host.test."}) {
		t.Errorf("LookupAddr(192.0.2.1) = %q, %v", names, err)
	}
}

func TestResolverNotFound(t *testing.T) {
	z := dnstest.Start(t)
	z.Add(t, `a-only.test. 300 IN A 192.0.2.1`)
	r := newResolver(z.Addr, "", time.Now)
	for _, name := range []string{"nx.test", "a-only.test", "bad..name", strings.Repeat("x", 64) + ".test"} {
		_, err := r.LookupTXT(context.Background(), name)
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound || de.Temporary() {
			t.Errorf("LookupTXT(%q) error = %#v, want a *net.DNSError, IsNotFound", name, err)
		}
	}
}

func TestResolverIDNA(t *testing.T) {
	z := dnstest.Start(t)
	z.Add(t, `xn--bcher-kva.test. 300 IN TXT "unicode"`, `_dmarc.xn--bcher-kva.test. 300 IN TXT "v=DMARC1; p=none"`)
	r := newResolver(z.Addr, "", time.Now)
	for _, c := range []struct{ name, want string }{{"Bücher.test", "unicode"}, {"_dmarc.bücher.test.", "v=DMARC1; p=none"}} {
		txts, err := r.LookupTXT(context.Background(), c.name)
		if err != nil || !slices.Equal(txts, []string{c.want}) {
			t.Errorf("LookupTXT(%s) = %q, %v; want the record of its A-label", c.name, txts, err)
		}
	}
}

func TestResolverCache(t *testing.T) {
	z := dnstest.Start(t)
	z.Add(t,
		`short.test. 60 IN TXT "short"`,
		`long.test. 86400 IN TXT "long"`,
		`a-only.test. 300 IN A 192.0.2.1`,
	)
	c := newClock()
	r := newResolver(z.Addr, "", c.now)
	ctx := context.Background()
	ask := func(name string) {
		t.Helper()
		if _, err := r.LookupTXT(ctx, name); err != nil && !isNotFound(err) {
			t.Fatalf("LookupTXT(%s): %v", name, err)
		}
	}
	want := func(name string, n int, why string) {
		t.Helper()
		if got := z.Count(name, dns.TypeTXT); got != n {
			t.Errorf("%s: server asked %d times for %s TXT, want %d", why, got, name, n)
		}
	}
	for _, name := range []string{"short.test", "long.test", "nx.test", "a-only.test"} {
		ask(name)
		ask(name)
		want(name, 1, "two lookups at once")
	}
	c.add(59 * time.Second)
	ask("short.test")
	want("short.test", 1, "within the TTL")
	c.add(2 * time.Second)
	ask("short.test")
	want("short.test", 2, "past the TTL")

	// Negative answers: the SOA says 20 s.
	c.add(15 * time.Second)
	ask("a-only.test")
	ask("nx.test")
	c.add(10 * time.Second)
	ask("nx.test")
	ask("a-only.test")
	want("nx.test", 2, "NXDOMAIN past its SOA minimum")
	want("a-only.test", 2, "NODATA past its SOA minimum")

	// A day's TTL is kept an hour.
	c.add(time.Hour - 2*time.Minute)
	ask("long.test")
	want("long.test", 1, "within the hour")
	c.add(2 * time.Minute)
	ask("long.test")
	want("long.test", 2, "past the hour a day's TTL is capped at")
}

func TestResolverServfailNotCached(t *testing.T) {
	z := dnstest.Start(t)
	z.Fail("broken.test")
	r := newResolver(z.Addr, "", time.Now)
	for range 2 {
		_, err := r.LookupTXT(context.Background(), "broken.test")
		var de *net.DNSError
		if !errors.As(err, &de) || !de.Temporary() || de.IsNotFound || !strings.Contains(de.Err, "SERVFAIL") {
			t.Fatalf("LookupTXT(broken.test) error = %#v, want a temporary *net.DNSError naming SERVFAIL", err)
		}
	}
	if n := z.Count("broken.test", dns.TypeTXT); n != 2 {
		t.Errorf("server asked %d times after two SERVFAILs, want 2 (not cached)", n)
	}
}

func TestResolverTCPOnTruncation(t *testing.T) {
	z := dnstest.Start(t)
	z.SetUDPLimit(512)
	big := strings.Repeat("k", 1500)
	z.TXT("big.test", big)
	r := newResolver(z.Addr, "", time.Now)
	txts, err := r.LookupTXT(context.Background(), "big.test")
	if err != nil || len(txts) != 1 || txts[0] != big {
		t.Fatalf("LookupTXT(big.test) = %d records, %v; want the 1500-octet one", len(txts), err)
	}
	if all, tcp := z.Total(); all != 2 || tcp != 1 {
		t.Errorf("server saw %d queries, %d over TCP; want 2, 1 (UDP truncated, then TCP)", all, tcp)
	}
}

func TestResolverTimeout(t *testing.T) {
	addr, _ := dnstest.Blackhole(t)
	r := newResolver(addr, "", time.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := r.LookupTXT(ctx, "example.test")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsTimeout || !de.Temporary() {
		t.Fatalf("LookupTXT from a server that never answers: %#v, want a timeout *net.DNSError", err)
	}
}

func TestResolverRefused(t *testing.T) {
	r := newResolver(dnstest.ClosedPort(t), "", time.Now)
	_, err := r.LookupTXT(context.Background(), "example.test")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.Temporary() || de.IsTimeout || de.Err != "DNS server unreachable" {
		t.Fatalf("LookupTXT from a closed port: %#v, want a temporary 'DNS server unreachable' *net.DNSError, not a timeout", err)
	}
}

// TestResolverEcho: the query read back, as when the kernel binds the
// resolver's socket to the server's own port, is no answer: not NODATA,
// which SPF would take for "none".
func TestResolverEcho(t *testing.T) {
	r := newResolver(dnstest.Echo(t), "", time.Now)
	_, err := r.LookupTXT(context.Background(), "example.test")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.Temporary() || de.IsNotFound || de.Err != "not an answer" {
		t.Fatalf("LookupTXT answered by the query itself: %#v, want a temporary 'not an answer' *net.DNSError", err)
	}
}

func TestResolverNoServers(t *testing.T) {
	r := newResolver("", filepath.Join(t.TempDir(), "missing.conf"), time.Now)
	_, err := r.LookupTXT(context.Background(), "example.test")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.Temporary() || !strings.Contains(de.Err, "no DNS server") {
		t.Fatalf("LookupTXT without resolv.conf: %#v, want a temporary 'no DNS server' *net.DNSError", err)
	}
}

func TestSystemServers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte("# comment\nsearch example.test\nnameserver 127.0.0.53\nnameserver ::1\noptions edns0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := systemServers(path)
	if want := []string{"127.0.0.53:53", "[::1]:53"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("systemServers = %q, %v; want %q", got, err, want)
	}
	if err := os.WriteFile(path, []byte("search example.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := systemServers(path); err == nil {
		t.Errorf("systemServers of a file without nameserver = %q, want an error", got)
	}
}

// TestResolverNotHosts: the names /etc/hosts answers (localhost, the PTR
// of 127.0.0.1) are asked of the DNS server like any other.
func TestResolverNotHosts(t *testing.T) {
	z := dnstest.Start(t)
	z.Add(t, `1.0.0.127.in-addr.arpa. 300 IN PTR loopback.burner.test.`)
	r := newResolver(z.Addr, "", time.Now)
	names, err := r.LookupAddr(context.Background(), "127.0.0.1")
	if err != nil || !slices.Equal(names, []string{"loopback.burner.test."}) {
		t.Errorf("LookupAddr(127.0.0.1) = %q, %v; want the DNS server's PTR, not /etc/hosts'", names, err)
	}
	if addrs, err := r.LookupIPAddr(context.Background(), "localhost"); !isNotFound(err) {
		t.Errorf("LookupIPAddr(localhost) = %v, %v; want the DNS server's NXDOMAIN", addrs, err)
	}
}

func TestCacheBounded(t *testing.T) {
	c := newCache(4, time.Now)
	for i := range 100 {
		c.put(cacheKey{name: strings.Repeat("x", i) + ".", qtype: dns.TypeTXT}, answer{}, time.Minute)
		if n := c.len(); n > 4 {
			t.Fatalf("after %d puts the cache holds %d answers, want at most 4", i+1, n)
		}
	}
	k := cacheKey{name: "last.", qtype: dns.TypeA}
	c.put(k, answer{}, time.Minute)
	if _, ok := c.get(k); !ok {
		t.Errorf("the answer just put is not in a full cache")
	}
}

func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// TestCanonicalName: the fast path for names in canonical form gives what
// the general one does, and leaves the rest to it.
func TestCanonicalName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"example.test", "example.test."},
		{"example.test.", "example.test."},
		{"_dmarc.example.test", "_dmarc.example.test."},
		{"s1._domainkey.a-b.test", "s1._domainkey.a-b.test."},
		{"10.2.0.192.in-addr.arpa.", "10.2.0.192.in-addr.arpa."},
		{"Example.TEST", "example.test."},
		{"bücher.test", "xn--bcher-kva.test."},
		{strings.Repeat("a", 63) + ".test", strings.Repeat("a", 63) + ".test."},
		{strings.Repeat("a", 64) + ".test", ""},
		{"bad..name", ""},
		{".", ""},
		{"", ""},
	} {
		got, err := canonicalName(c.in)
		if (err != nil) != (c.want == "") || got != c.want {
			t.Errorf("canonicalName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
