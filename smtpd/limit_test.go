package smtpd

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

// spec §2: loopback is a trusted network by default, so a CI host's
// parallel test workers all get in.
func TestLoopbackExemptByDefault(t *testing.T) {
	db := openDB(t)
	addr := startDaemon(t, db, Options{})
	for range 60 {
		dialRaw(t, addr) // fails the test unless greeted 220
	}
}

// spec §2: without trusted networks the limit per address is half of
// max_connections; the next connection from that address gets 421 naming
// the limit, and another address still gets in.
func TestPerAddressLimitIsHalf(t *testing.T) {
	db := openDB(t)
	addr := startDaemon(t, db, Options{TrustedNetworks: []netip.Prefix{}})
	for range 50 {
		dialRaw(t, addr)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(conn)
	if want := "421 4.7.0 Too many connections from your address (limit 50 per address), try again later\r\n"; string(got) != want {
		t.Errorf("51st connection from 127.0.0.1 got %q, want %q", got, want)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 10 * time.Second}
	other, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from 127.0.0.2: %v", err)
	}
	defer other.Close()
	other.SetDeadline(time.Now().Add(10 * time.Second))
	if line, err := textproto.NewReader(bufio.NewReader(other)).ReadLine(); err != nil || !strings.HasPrefix(line, "220 ") {
		t.Errorf("a connection from 127.0.0.2 read %q, %v; want the 220 greeting", line, err)
	}
}

// A trusted network exempts its addresses from the per-address limit, and
// only those.
func TestTrustedNetworks(t *testing.T) {
	l := &limitListener{trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	for _, tc := range []struct {
		addr    string
		trusted bool
	}{
		{"127.0.0.1:25", true}, {"127.200.0.9:25", true}, {"[::1]:25", true}, {"[::ffff:127.0.0.1]:25", true},
		{"192.0.2.1:25", false}, {"[::2]:25", false}, {"[2001:db8::1]:25", false},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.isTrusted(addrOf(a)); got != tc.trusted {
			t.Errorf("isTrusted(%s) = %v, want %v", tc.addr, got, tc.trusted)
		}
	}
}

// spec §2, stress mode: with more than 80% of the slots taken, a session
// waiting for a command is closed after the stress idle timeout, whether
// it began waiting before the stress (the first connection) or during it
// (the last).
func TestStressIdleTimeout(t *testing.T) {
	db := openDB(t)
	if got := New(db, Options{}, nil).stressIdle; got != 10*time.Second {
		t.Errorf("the default stress idle timeout is %v, want 10s", got)
	}
	addr := startDaemon(t, db, Options{MaxConnections: 100})
	var open []*rawClient
	for range 81 {
		open = append(open, dialRaw(t, addr))
	}
	start := time.Now()
	errc := make(chan error, 2)
	for _, c := range []*rawClient{open[0], open[80]} {
		c.conn.SetDeadline(start.Add(20 * time.Second))
		go func() {
			code, msg, err := c.reply()
			if err != nil || code != 421 {
				errc <- errors.New("idle session read " + msg + ", " + errString(err) + "; want a 421")
				return
			}
			if rest, err := io.ReadAll(c.r.R); err != nil || len(rest) != 0 {
				errc <- errors.New("after the 421 the connection was not closed: " + errString(err))
				return
			}
			errc <- nil
		}()
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("idle sessions closed after %v, want within 20s", d)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// wire.go fails closed: when go-smtp's reader is out of reach, Serve
// returns why, and the listener is closed, so no mail goes through
// go-smtp's own reader.
func TestServeRefusesWithoutWire(t *testing.T) {
	if err := checkWire(); err != nil {
		t.Fatalf("checkWire() = %v with the go-smtp in go.mod, want nil", err)
	}
	db := openDB(t)
	srv := New(db, Options{checkWire: func() error { return errNoWire }}, nil)
	if err := srv.Err(); !errors.Is(err, errNoWire) {
		t.Errorf("Err() = %v, want errNoWire, so that serve stops before it starts", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		if !errors.Is(err, errNoWire) || !strings.Contains(err.Error(), "wire") {
			t.Errorf("Serve returned %v, want errNoWire", err)
		}
	case <-time.After(10 * time.Second):
		srv.smtp.Close()
		t.Fatal("Serve is serving without the wire")
	}
	if conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("the listener still accepts connections after Serve refused")
	}
	// serve then shuts down as after any server's failure.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown after Serve refused: %v", err)
	}
}

// TestShutdownClosesWhatOutlastsIt: a session still open when Shutdown's
// context ends is closed then, rather than left to the process's exit
// (go-smtp's own Close does nothing once Shutdown has begun).
func TestShutdownClosesWhatOutlastsIt(t *testing.T) {
	db := openDB(t)
	srv := New(db, Options{}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	if greeting, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(greeting, "220 ") {
		t.Fatalf("greeting %q, %v", greeting, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with an idle session open = %v, want the context's deadline", err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the session is still open 5 s after Shutdown gave up (read %q)", rest)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve returned %v", err)
	}
}

// addrOf's shortcut for TCP gives what parsing the address's text gives,
// which other kinds of address still go through.
func TestAddrOf(t *testing.T) {
	for _, s := range []string{"192.0.2.1:25", "[::ffff:192.0.2.1]:25", "[2001:db8::1]:25", "[fe80::1%eth0]:25"} {
		a := net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s))
		want := netip.MustParseAddrPort(s).Addr().Unmap()
		if got := addrOf(a); got != want {
			t.Errorf("addrOf(%s) = %v, want %v", s, got, want)
		}
		if got := addrOf(&net.UDPAddr{IP: a.IP, Port: a.Port, Zone: a.Zone}); got != want {
			t.Errorf("addrOf(udp %s) = %v, want %v", s, got, want)
		}
	}
	if got := addrOf(&net.TCPAddr{}); got.IsValid() {
		t.Errorf("addrOf(no IP) = %v, want none", got)
	}
	if got := addrOf(&net.UnixAddr{Name: "/tmp/s", Net: "unix"}); got.IsValid() {
		t.Errorf("addrOf(unix) = %v, want none", got)
	}
}
