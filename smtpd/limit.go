package smtpd

import (
	"net"
	"sync"
	"time"
)

// limitListener caps the connections open at once. A connection beyond the
// cap is answered 421 and closed at once, as RFC 5321 §3.8 allows, instead
// of waiting in the accept queue: the client learns to come back later and
// holds nothing of ours.
type limitListener struct {
	net.Listener
	slots chan struct{}
	busy  func(net.Conn) // answers a connection over the cap
}

func newLimitListener(ln net.Listener, max int, busy func(net.Conn)) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), busy: busy}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			l.busy(c)
		}
	}
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

// tooBusy is the whole conversation with a connection over the cap.
func tooBusy(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write([]byte("421 4.7.0 Too many connections, try again later\r\n"))
	c.Close()
}
