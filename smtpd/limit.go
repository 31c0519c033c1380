package smtpd

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// limitListener caps the connections open at once, in all and from one
// address. A connection beyond a cap is answered 421 and closed at once, as
// RFC 5321 §3.8 allows, instead of waiting in the accept queue: the client
// learns to come back later and holds nothing of ours. Without the cap per
// address, one host's idle connections, kept alive with NOOP, would take
// every slot.
type limitListener struct {
	net.Listener
	slots chan struct{}
	perIP int
	busy  func(c net.Conn, perAddress bool) // answers a connection over a cap

	mu   sync.Mutex
	open map[netip.Addr]int // by sourceOf
}

func newLimitListener(ln net.Listener, max, perIP int, busy func(net.Conn, bool)) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), perIP: perIP, busy: busy, open: make(map[netip.Addr]int)}
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
		src := sourceOf(c.RemoteAddr())
		l.mu.Lock()
		full := l.open[src] >= l.perIP
		if !full {
			l.open[src]++
		}
		l.mu.Unlock()
		if full {
			<-l.slots
			l.busy(c, true)
			continue
		}
		return &limitConn{Conn: c, release: func() { l.release(src) }}, nil
	}
}

func (l *limitListener) release(src netip.Addr) {
	l.mu.Lock()
	if l.open[src]--; l.open[src] <= 0 {
		delete(l.open, src)
	}
	l.mu.Unlock()
	<-l.slots
}

// sourceOf is the address a connection counts against: its IP, or for
// IPv6 its /64, which one host gets as easily as one address.
func sourceOf(a net.Addr) netip.Addr {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{} // not TCP: all such connections share one count
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// limitConn gives its slot back once, when it is closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// tooBusy is the whole conversation with a connection over a cap.
func tooBusy(c net.Conn, reply string) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write([]byte(reply))
	c.Close()
}
