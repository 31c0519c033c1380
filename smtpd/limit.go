package smtpd

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener caps the connections open at once, in all and from one
// address. A connection beyond a cap is answered 421 and closed at once, as
// RFC 5321 §3.8 allows, instead of waiting in the accept queue: the client
// learns to come back later and holds nothing of ours. Without the cap per
// address, one host's idle connections, kept alive with NOOP, would take
// every slot. spec §2: the trusted networks (loopback by default) are not
// counted per address, and when more than 80% of the slots are taken the
// listener is under stress (Postfix's word): a session that is not reading
// a message's data waits stressIdle at most for its next command, so idle
// sessions cannot hold the slots.
type limitListener struct {
	net.Listener
	slots      chan struct{}
	perIP      int
	trusted    []netip.Prefix
	stressIdle time.Duration
	busy       func(c net.Conn, perAddress bool) // answers a connection over a cap

	mu    sync.Mutex
	open  map[netip.Addr]int // by sourceOf, untrusted addresses only
	conns map[*limitConn]struct{}
	// stressed is whether more than 80% of the slots are taken, as of the
	// last accept or release; written under mu, read without it.
	stressed atomic.Bool
}

func newLimitListener(ln net.Listener, max, perIP int, trusted []netip.Prefix, stressIdle time.Duration, busy func(net.Conn, bool)) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), perIP: perIP, trusted: trusted, stressIdle: stressIdle, busy: busy,
		open: make(map[netip.Addr]int), conns: make(map[*limitConn]struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.busy(c, false)
			continue
		}
		ip := addrOf(c.RemoteAddr())
		src, counted := sourceOf(ip), !l.isTrusted(ip)
		lc := &limitConn{Conn: c, l: l, src: src, counted: counted}
		l.mu.Lock()
		full := counted && l.open[src] >= l.perIP
		if !full {
			if counted {
				l.open[src]++
			}
			l.conns[lc] = struct{}{}
			l.checkStress()
		}
		l.mu.Unlock()
		if full {
			<-l.slots
			l.busy(c, true)
			continue
		}
		return lc, nil
	}
}

func (l *limitListener) isTrusted(ip netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// checkStress notes whether the listener is under stress, and when it has
// just come under it, shortens the wait of every session that is not
// reading a message's data (later waits are cut in SetReadDeadline). l.mu
// is held.
func (l *limitListener) checkStress() {
	now := len(l.conns)*5 > cap(l.slots)*4
	if was := l.stressed.Swap(now); !now || was {
		return
	}
	for c := range l.conns {
		c.mu.Lock()
		if !c.inData {
			c.Conn.SetReadDeadline(time.Now().Add(l.stressIdle))
		}
		c.mu.Unlock()
	}
}

func (l *limitListener) release(c *limitConn) {
	l.mu.Lock()
	if c.counted {
		if l.open[c.src]--; l.open[c.src] <= 0 {
			delete(l.open, c.src)
		}
	}
	delete(l.conns, c)
	l.checkStress()
	l.mu.Unlock()
	<-l.slots
}

// closeAll closes every connection the listener has handed out; each gives
// its slot back as its session ends.
func (l *limitListener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Conn.Close()
	}
}

// addrOf is a connection's IP address; the zero Addr if it has none.
func addrOf(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		// What every listener of ours hands out: no string to format and
		// parse again.
		return t.AddrPort().Addr().Unmap()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{} // not TCP: all such connections share one count
	}
	return ap.Addr().Unmap()
}

// sourceOf is the address a connection from ip counts against: ip, or for
// IPv6 its /64, which one host gets as easily as one address.
func sourceOf(ip netip.Addr) netip.Addr {
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// limitConn gives its slot back once, when it is closed.
type limitConn struct {
	net.Conn
	l       *limitListener
	src     netip.Addr
	counted bool // against src's per-address count
	once    sync.Once

	mu     sync.Mutex
	inData bool // the session is reading a message's data (see readingData)

	// carry is what a session that ended at STARTTLS hands the next on
	// the connection: the conversation since its last record (EHLO,
	// STARTTLS), for the next record's transcript. go-smtp's goroutine for
	// the connection is the only one to touch it.
	carry span
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// SetReadDeadline sets the deadline of the next reads; under stress, that
// of a session that is not reading a message's data comes stressIdle from
// now at the latest. go-smtp sets command_timeout through here before each
// command it reads, over TLS too (tls.Conn passes it down).
func (c *limitConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inData && c.l.stressed.Load() {
		if cut := time.Now().Add(c.l.stressIdle); t.IsZero() || t.After(cut) {
			t = cut
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// readingData tells c whether its session is reading a message's data
// (DATA, from the command to the reply), which data_timeout bounds and
// stress does not cut. The lock keeps the listener from cutting the
// deadline of a session that has just begun to read data. (Lock order:
// the listener's mu, then a connection's.)
func (c *limitConn) readingData(inData bool) {
	c.mu.Lock()
	c.inData = inData
	c.mu.Unlock()
}

// limitConnOf is the limitConn under c, through TLS; nil if there is none.
func limitConnOf(c net.Conn) *limitConn {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitConn)
	return lc
}

// tooBusy is the whole conversation with a connection over a cap.
func tooBusy(c net.Conn, reply string) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write([]byte(reply))
	c.Close()
}
