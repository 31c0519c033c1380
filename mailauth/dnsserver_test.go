package mailauth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"burner/storage"

	"github.com/miekg/dns"
)

// testDNS is a DNS server on 127.0.0.1, UDP and TCP on one port, answering
// from the records the test adds, and counting the questions it gets.
type testDNS struct {
	addr string

	mu       sync.Mutex
	rrs      map[string][]dns.RR // by lower-case owner name
	servfail map[string]bool     // names answered SERVFAIL
	asked    map[cacheKey]int
	overTCP  int
	// udpLimit, when set, truncates UDP answers to that size whatever the
	// client offers, to send it to TCP.
	udpLimit int
}

// startDNS starts a testDNS, stopped at the end of the test.
func startDNS(t testing.TB) *testDNS {
	t.Helper()
	z := &testDNS{rrs: map[string][]dns.RR{}, servfail: map[string]bool{}, asked: map[cacheKey]int{}}
	var pc net.PacketConn
	var ln net.Listener
	for try := 0; ; try++ { // the TCP port of the same number may be taken: try another
		var err error
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
		if try == 20 {
			t.Fatalf("no port free for UDP and TCP both: %v", err)
		}
	}
	z.addr = pc.LocalAddr().String()
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: z}, {Listener: ln, Handler: z}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		served := make(chan error, 1)
		go func() { served <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-served:
			t.Fatalf("DNS server: %v", err)
		}
		t.Cleanup(func() {
			if err := srv.Shutdown(); err != nil {
				t.Errorf("DNS server shutdown: %v", err)
			}
			<-served
		})
	}
	return z
}

// add adds records in zone file syntax ("name. 300 IN TXT \"v=spf1 -all\"").
func (z *testDNS) add(t testing.TB, records ...string) {
	t.Helper()
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, s := range records {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("dns.NewRR(%q): %v", s, err)
		}
		name := strings.ToLower(rr.Header().Name)
		z.rrs[name] = append(z.rrs[name], rr)
	}
}

// txt adds a TXT record of one or more strings of at most 255 octets,
// as a zone file would split a long one.
func (z *testDNS) txt(t testing.TB, name, value string) {
	t.Helper()
	rr := &dns.TXT{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 300}}
	for len(value) > 255 {
		rr.Txt = append(rr.Txt, value[:255])
		value = value[255:]
	}
	rr.Txt = append(rr.Txt, value)
	z.mu.Lock()
	defer z.mu.Unlock()
	k := strings.ToLower(rr.Hdr.Name)
	z.rrs[k] = append(z.rrs[k], rr)
}

// fail makes the server answer SERVFAIL for name.
func (z *testDNS) fail(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.servfail[strings.ToLower(dns.Fqdn(name))] = true
}

// count returns how many times (name, qtype) was asked.
func (z *testDNS) count(name string, qtype uint16) int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.asked[cacheKey{strings.ToLower(dns.Fqdn(name)), qtype}]
}

// total returns how many questions were asked, and how many over TCP.
func (z *testDNS) total() (all, tcp int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, n := range z.asked {
		all += n
	}
	return all, z.overTCP
}

// asks returns the questions asked whose name ends in suffix.
func (z *testDNS) asks(suffix string) map[cacheKey]int {
	z.mu.Lock()
	defer z.mu.Unlock()
	got := map[cacheKey]int{}
	for k, n := range z.asked {
		if strings.HasSuffix(k.name, suffix) {
			got[k] = n
		}
	}
	return got
}

var testSOA = func() dns.RR {
	rr, err := dns.NewRR("test. 3600 IN SOA ns.test. hostmaster.test. 1 3600 600 86400 20")
	if err != nil {
		panic(err)
	}
	return rr
}()

// ServeDNS answers from the records: those of the type at the name, after
// any CNAME there; NXDOMAIN when the name has no records at all, else
// NOERROR (empty when it has none of the type), with an SOA whose minimum
// is 20 s for a negative answer.
func (z *testDNS) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	_, isTCP := w.RemoteAddr().(*net.TCPAddr)

	z.mu.Lock()
	z.asked[cacheKey{name, q.Qtype}]++
	if isTCP {
		z.overTCP++
	}
	limit := z.udpLimit
	if z.servfail[name] {
		z.mu.Unlock()
		m.Rcode = dns.RcodeServerFailure
		w.WriteMsg(m)
		return
	}
	for range 8 {
		var next string
		for _, rr := range z.rrs[name] {
			if c, ok := rr.(*dns.CNAME); ok && q.Qtype != dns.TypeCNAME {
				m.Answer = append(m.Answer, c)
				next = strings.ToLower(c.Target)
			}
		}
		if next == "" {
			break
		}
		name = next
	}
	rrs, exists := z.rrs[name]
	for _, rr := range rrs {
		if rr.Header().Rrtype == q.Qtype {
			m.Answer = append(m.Answer, rr)
		}
	}
	z.mu.Unlock()

	if !exists && len(m.Answer) == 0 {
		m.Rcode = dns.RcodeNameError
	}
	if len(m.Answer) == 0 {
		m.Ns = append(m.Ns, testSOA)
	}
	if !isTCP {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		if limit > 0 {
			size = limit
		}
		m.Truncate(size)
	}
	w.WriteMsg(m)
}

// blackhole returns the address of a UDP socket that reads every query and
// never answers; each query read is signalled on the channel (dropped when
// nobody listens).
func blackhole(t testing.TB) (string, <-chan struct{}) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			select {
			case got <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	return pc.LocalAddr().String(), got
}

// closedPort returns a UDP address nothing listens on: queries to it are
// refused at once (ICMP port unreachable).
func closedPort(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return addr
}

// newTestVerifier returns a Verifier asking z (or addr), shut down at the
// end of the test.
func newTestVerifier(t testing.TB, opts Options, done Done) *Verifier {
	t.Helper()
	if opts.Hostname == "" {
		opts.Hostname = "mx.burner.test"
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if tt, ok := t.(*testing.T); ok {
		log = slog.New(slog.NewTextHandler(tt.Output(), nil))
	}
	v := New(opts, done, log)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := v.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return v
}

// envelope returns an envelope from ip with helo and mailFrom, no TLS.
func envelope(ip, helo, mailFrom string) storage.Envelope {
	env := storage.Envelope{Helo: helo, MailFrom: mailFrom}
	if ip != "" {
		env.ClientIP = netip.MustParseAddr(ip)
	}
	return env
}
