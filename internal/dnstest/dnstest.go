// Package dnstest gives the tests of several packages (mailauth, server,
// smtpd, main) what checking mail's authentication needs (spec §12): a
// DNS server on 127.0.0.1 that answers from records a test adds, servers
// that never answer or refuse, and DKIM keys, their records and
// signatures.
package dnstest

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/miekg/dns"
)

// Server is a DNS server on 127.0.0.1, UDP and TCP on one port, answering
// from the records the test adds, and counting the questions it gets.
type Server struct {
	// Addr is the host:port it answers on, UDP and TCP.
	Addr string

	mu       sync.Mutex
	rrs      map[string][]dns.RR // by lower-case owner name
	servfail map[string]bool     // names answered SERVFAIL
	asked    map[Question]int
	overTCP  int
	udpLimit int
}

// Question is a name (lower case, with its final dot) and a type asked.
type Question struct {
	Name string
	Type uint16
}

// Start starts a Server, stopped at the end of the test.
func Start(t testing.TB) *Server {
	t.Helper()
	z := &Server{rrs: map[string][]dns.RR{}, servfail: map[string]bool{}, asked: map[Question]int{}}
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
	z.Addr = pc.LocalAddr().String()
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

// Add adds records in zone file syntax ("name. 300 IN TXT \"v=spf1 -all\"").
func (z *Server) Add(t testing.TB, records ...string) {
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

// TXT adds a TXT record of one or more strings of at most 255 octets, as
// a zone file would split a long one.
func (z *Server) TXT(name, value string) {
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

// Fail makes the server answer SERVFAIL for name.
func (z *Server) Fail(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.servfail[strings.ToLower(dns.Fqdn(name))] = true
}

// SetUDPLimit truncates UDP answers to n octets whatever the client
// offers, to send it to TCP; 0 lifts the limit.
func (z *Server) SetUDPLimit(n int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.udpLimit = n
}

// Count returns how many times (name, qtype) was asked.
func (z *Server) Count(name string, qtype uint16) int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.asked[Question{strings.ToLower(dns.Fqdn(name)), qtype}]
}

// Total returns how many questions were asked, and how many over TCP.
func (z *Server) Total() (all, tcp int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, n := range z.asked {
		all += n
	}
	return all, z.overTCP
}

// Asks returns the questions asked whose name ends in suffix, and how
// many times each was.
func (z *Server) Asks(suffix string) map[Question]int {
	z.mu.Lock()
	defer z.mu.Unlock()
	got := map[Question]int{}
	for k, n := range z.asked {
		if strings.HasSuffix(k.Name, suffix) {
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
func (z *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
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
	z.asked[Question{name, q.Qtype}]++
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

// Blackhole returns the address of a UDP socket that reads every query
// and never answers; each query read is signalled on the channel (dropped
// when nobody listens).
func Blackhole(t testing.TB) (string, <-chan struct{}) {
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

// Echo returns the address of a UDP socket that sends every datagram
// back as it came, as a socket the kernel connected to its own port reads
// its own query.
func Echo(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	return pc.LocalAddr().String()
}

// ClosedPort returns a UDP address nothing listens on: queries to it are
// refused at once (ICMP port unreachable).
func ClosedPort(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return addr
}

// KeyRecord returns the DKIM key record (RFC 6376 §3.6.1) of key's public
// key, an RSA or an Ed25519 one.
func KeyRecord(t testing.TB, key crypto.Signer) string {
	t.Helper()
	switch pub := key.Public().(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub)
	}
	t.Fatalf("no record for %T", key)
	return ""
}

// Sign returns raw with a DKIM-Signature of domain and selector by key on
// top, relaxed/relaxed, over From, To, Subject, Date and Message-ID.
func Sign(t testing.TB, raw []byte, domain, selector string, key crypto.Signer) []byte {
	t.Helper()
	var out bytes.Buffer
	err := dkim.Sign(&out, bytes.NewReader(raw), &dkim.SignOptions{
		Domain: domain, Selector: selector, Signer: key,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed, BodyCanonicalization: dkim.CanonicalizationRelaxed,
		HeaderKeys: []string{"From", "To", "Subject", "Date", "Message-ID"},
	})
	if err != nil {
		t.Fatalf("dkim.Sign: %v", err)
	}
	return out.Bytes()
}
