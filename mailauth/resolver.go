package mailauth

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/idna"
)

// The resolver sends every query itself, with github.com/miekg/dns, to
// dns.resolver or to the servers of /etc/resolv.conf, and never reads
// /etc/hosts: Go's net.Resolver answers PTR for 127.0.0.1 from /etc/hosts
// even with a custom Dial (spec §12), and a verdict must be what the DNS
// says. Errors are *net.DNSError, unwrapped, because the SPF, DKIM and
// DMARC libraries tell "no such record" from "try later" by asserting that
// type: IsNotFound for NXDOMAIN and for a name without records of the type
// (as net.Resolver does), IsTemporary or IsTimeout for everything else.

const (
	// maxTTL caps how long an answer is kept (spec §12: at most an hour).
	maxTTL = time.Hour
	// maxNegativeTTL caps how long "no such record" is kept: briefly, so
	// that a record just published is seen on the next message.
	maxNegativeTTL = time.Minute
	// defaultNegativeTTL is for a negative answer without an SOA to say.
	defaultNegativeTTL = 30 * time.Second
	// cacheSize bounds the number of answers kept.
	cacheSize = 10000
	// attemptTimeout bounds one query to one server, so that a lost UDP
	// packet costs a retry rather than the whole of dns.timeout.
	attemptTimeout = 2 * time.Second
	// maxChain bounds the CNAMEs followed within one answer.
	maxChain = 8
	// udpSize is the EDNS0 buffer size offered (the DNS flag day 2020 value).
	udpSize = 1232
)

// resolver answers the lookups of the SPF, DKIM and DMARC libraries and of
// FCrDNS, through its cache. It is safe for concurrent use.
type resolver struct {
	servers []string // host:port, tried in order
	noDNS   error    // why there are no servers: every lookup fails at once
	udp     dns.Client
	tcp     dns.Client
	cache   *cache
}

// newResolver returns a resolver that asks addr (host:port) or, when addr
// is "", the servers listed in the resolv.conf file at path.
func newResolver(addr, path string, now func() time.Time) *resolver {
	r := &resolver{
		udp:   dns.Client{Net: "udp", UDPSize: udpSize},
		tcp:   dns.Client{Net: "tcp"},
		cache: newCache(cacheSize, now),
	}
	if addr != "" {
		r.servers = []string{addr}
		return r
	}
	r.servers, r.noDNS = systemServers(path)
	return r
}

// systemServers returns the name servers of the resolv.conf file at path,
// each as host:port.
func systemServers(path string) ([]string, error) {
	conf, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, err
	}
	servers := make([]string, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		servers = append(servers, net.JoinHostPort(s, conf.Port))
	}
	if len(servers) == 0 {
		return nil, errors.New("no nameserver in " + path)
	}
	return servers, nil
}

// answer is what one question got: the records of its type at the name or
// at the end of its CNAME chain, or none (NXDOMAIN or NODATA).
type answer struct {
	rrs []dns.RR
}

// LookupTXT returns the TXT records of name, the strings of each joined
// (as net.Resolver does).
func (r *resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	a, err := r.lookup(ctx, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	txts := make([]string, 0, len(a.rrs))
	for _, rr := range a.rrs {
		txts = append(txts, strings.Join(rr.(*dns.TXT).Txt, ""))
	}
	return txts, nil
}

// LookupMX returns the MX records of name.
func (r *resolver) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	a, err := r.lookup(ctx, name, dns.TypeMX)
	if err != nil {
		return nil, err
	}
	mxs := make([]*net.MX, 0, len(a.rrs))
	for _, rr := range a.rrs {
		mx := rr.(*dns.MX)
		mxs = append(mxs, &net.MX{Host: mx.Mx, Pref: mx.Preference})
	}
	return mxs, nil
}

// LookupIPAddr returns the A and AAAA records of host. It fails only when
// both lookups do: with the temporary error if either was one.
func (r *resolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	var addrs []net.IPAddr
	var firstErr error
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		a, err := r.lookup(ctx, host, qtype)
		if err != nil {
			if firstErr == nil || !isNotFound(err) {
				firstErr = err
			}
			continue
		}
		for _, rr := range a.rrs {
			switch rr := rr.(type) {
			case *dns.A:
				addrs = append(addrs, net.IPAddr{IP: rr.A})
			case *dns.AAAA:
				addrs = append(addrs, net.IPAddr{IP: rr.AAAA})
			}
		}
	}
	if len(addrs) == 0 {
		return nil, firstErr
	}
	return addrs, nil
}

// LookupAddr returns the PTR names of the address addr, each with its
// trailing dot (as net.Resolver does).
func (r *resolver) LookupAddr(ctx context.Context, addr string) ([]string, error) {
	rev, err := dns.ReverseAddr(addr)
	if err != nil {
		return nil, &net.DNSError{Err: "unrecognized address", Name: addr}
	}
	a, err := r.lookup(ctx, rev, dns.TypePTR)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(a.rrs))
	for _, rr := range a.rrs {
		names = append(names, rr.(*dns.PTR).Ptr)
	}
	return names, nil
}

// lookup returns the answer to (name, qtype), from the cache or from the
// servers. A name without records of the type is an IsNotFound error.
func (r *resolver) lookup(ctx context.Context, name string, qtype uint16) (answer, error) {
	fqdn, err := canonicalName(name)
	if err != nil {
		return answer{}, &net.DNSError{Err: err.Error(), Name: name, IsNotFound: true}
	}
	k := cacheKey{fqdn, qtype}
	a, ok := r.cache.get(k)
	if !ok {
		var ttl time.Duration
		a, ttl, err = r.exchange(ctx, fqdn, qtype)
		if err != nil {
			return answer{}, err
		}
		r.cache.put(k, a, ttl)
	}
	if len(a.rrs) == 0 {
		return answer{}, &net.DNSError{Err: "no such host", Name: strings.TrimSuffix(fqdn, "."), IsNotFound: true}
	}
	return a, nil
}

// idnaLookup maps names as idna.Lookup does, but lets through the
// underscores of _dmarc and _domainkey (STD3 rules are for host names).
var idnaLookup = idna.New(idna.MapForLookup(), idna.StrictDomainName(false))

// canonicalName returns name lower-cased, in ASCII (IDNA) and fully
// qualified.
func canonicalName(name string) (string, error) {
	if plainName(name) {
		if name[len(name)-1] != '.' {
			name += "."
		}
		return name, nil
	}
	name = strings.TrimSuffix(name, ".")
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			ascii, err := idnaLookup.ToASCII(name)
			if err != nil {
				return "", err
			}
			name = ascii
			break
		}
	}
	if _, ok := dns.IsDomainName(name); !ok || name == "" {
		return "", errors.New("invalid domain name")
	}
	return dns.Fqdn(strings.ToLower(name)), nil
}

// plainName reports whether name is canonical but for its final dot,
// which may be missing: lower-case letters, digits, hyphens and
// underscores in labels of 1 to 63 octets, at most 253 of them without
// the dot, as nearly every name the checks ask is. It spares a lookup
// that the cache answers the parsing of the general case (a tenth of a
// verification's CPU).
func plainName(name string) bool {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	label := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if label == 0 || label > 63 {
				return false
			}
			label = 0
			continue
		}
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			label++
		default:
			return false
		}
	}
	return true
}

// exchange asks the servers, in order, until one answers; a query that
// times out is sent once more while ctx allows. A truncated UDP answer is
// asked again over TCP. It returns the answer and how long it may be kept.
func (r *resolver) exchange(ctx context.Context, fqdn string, qtype uint16) (answer, time.Duration, error) {
	if r.noDNS != nil {
		return answer{}, 0, &net.DNSError{Err: "no DNS server: " + r.noDNS.Error(), Name: strings.TrimSuffix(fqdn, "."), IsTemporary: true}
	}
	q := new(dns.Msg)
	q.SetQuestion(fqdn, qtype)
	q.SetEdns0(udpSize, false)
	var why string // the last failure, without addresses: it may be shown to API clients
	timedOut := false
	for try := 0; try < 2; try++ {
		retry := false
		for _, server := range r.servers {
			if ctx.Err() != nil {
				return answer{}, 0, timeoutError(fqdn)
			}
			m, err := r.ask(ctx, &r.udp, q, server)
			if err == nil && m.Truncated {
				m, err = r.ask(ctx, &r.tcp, q, server)
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					retry, timedOut, why = true, true, "i/o timeout"
				} else if errors.Is(err, errOtherQuestion) || errors.Is(err, errNotAnswer) {
					why = err.Error()
				} else {
					why = "DNS server unreachable"
				}
				continue
			}
			switch m.Rcode {
			case dns.RcodeSuccess, dns.RcodeNameError:
				a, ttl := parseAnswer(m, fqdn, qtype)
				return a, ttl, nil
			}
			why = "server answered " + dns.RcodeToString[m.Rcode]
		}
		if !retry {
			break
		}
	}
	if ctx.Err() != nil {
		return answer{}, 0, timeoutError(fqdn)
	}
	return answer{}, 0, &net.DNSError{Err: why, Name: strings.TrimSuffix(fqdn, "."), IsTimeout: timedOut && why == "i/o timeout", IsTemporary: true}
}

// errOtherQuestion is an answer whose question is not the one asked.
var errOtherQuestion = errors.New("answer to another question")

// errNotAnswer is a message without the response bit (RFC 1035 §4.1.1):
// most likely the query itself, read back by a socket the kernel bound to
// the server's own port, which a NOERROR without records would otherwise
// turn into "no such record".
var errNotAnswer = errors.New("not an answer")

func timeoutError(fqdn string) error {
	return &net.DNSError{Err: "i/o timeout", Name: strings.TrimSuffix(fqdn, "."), IsTimeout: true, IsTemporary: true}
}

// ask sends q to server once and reads its answer, within attemptTimeout
// and ctx; cancelling ctx closes the connection at once. An answer that is
// not to q's question is an error.
func (r *resolver) ask(ctx context.Context, c *dns.Client, q *dns.Msg, server string) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	conn, err := c.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	q = q.Copy()
	q.Id = dns.Id() // a fresh id (and source port) for every query sent
	m, _, err := c.ExchangeWithConnContext(ctx, q, conn)
	if err != nil {
		return nil, err
	}
	if !m.Response {
		return nil, errNotAnswer
	}
	if len(m.Question) != 1 || !strings.EqualFold(m.Question[0].Name, q.Question[0].Name) || m.Question[0].Qtype != q.Question[0].Qtype {
		return nil, errOtherQuestion
	}
	return m, nil
}

// parseAnswer returns the records of qtype at fqdn or at the end of its
// CNAME chain in m, and how long they may be kept: their least TTL, or for
// a negative answer its SOA's (RFC 2308 §5), within the caps.
func parseAnswer(m *dns.Msg, fqdn string, qtype uint16) (answer, time.Duration) {
	owners := map[string]bool{strings.ToLower(fqdn): true}
	for range maxChain {
		grew := false
		for _, rr := range m.Answer {
			if c, ok := rr.(*dns.CNAME); ok && owners[strings.ToLower(c.Hdr.Name)] && !owners[strings.ToLower(c.Target)] {
				owners[strings.ToLower(c.Target)] = true
				grew = true
			}
		}
		if !grew {
			break
		}
	}
	var a answer
	ttl := maxTTL
	for _, rr := range m.Answer {
		h := rr.Header()
		if h.Rrtype != qtype || !owners[strings.ToLower(h.Name)] {
			continue
		}
		a.rrs = append(a.rrs, rr)
		ttl = min(ttl, time.Duration(h.Ttl)*time.Second)
	}
	if len(a.rrs) > 0 {
		return a, ttl
	}
	ttl = defaultNegativeTTL
	for _, rr := range m.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			ttl = time.Duration(min(soa.Hdr.Ttl, soa.Minttl)) * time.Second
			break
		}
	}
	return a, min(ttl, maxNegativeTTL)
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// cacheKey is one question.
type cacheKey struct {
	name  string // lower-case, fully qualified
	qtype uint16
}

type cacheEntry struct {
	a       answer
	expires time.Time
}

// cache keeps answers for their TTL, at most size of them: when it is
// full, an insert drops one arbitrary entry (Go's map order) and any
// expired ones met right after it (at most 16 in all), so that a flood of
// names costs bounded memory and bounded work per insert.
type cache struct {
	mu   sync.Mutex
	m    map[cacheKey]cacheEntry
	size int
	now  func() time.Time
}

func newCache(size int, now func() time.Time) *cache {
	return &cache{m: make(map[cacheKey]cacheEntry), size: size, now: now}
}

func (c *cache) get(k cacheKey) (answer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		return answer{}, false
	}
	if !c.now().Before(e.expires) {
		delete(c.m, k)
		return answer{}, false
	}
	return e.a, true
}

func (c *cache) put(k cacheKey, a answer, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.size {
		n := 0
		for old, e := range c.m {
			if n > 0 && !now.After(e.expires) {
				break
			}
			delete(c.m, old)
			n++
			if n >= 16 {
				break
			}
		}
	}
	c.m[k] = cacheEntry{a: a, expires: now.Add(ttl)}
}
