package smtpd

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// rawClient speaks SMTP byte by byte, for what go-smtp's client will not
// send: a cut-off chunk, a bare CR before the end of data, a huge SIZE.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	r    *textproto.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("net.Dial(%s): %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	// Every reply comes at once or never: a hang fails the test, not CI.
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	c := &rawClient{t: t, conn: conn, r: textproto.NewReader(bufio.NewReader(conn))}
	c.want(220, "greeting")
	return c
}

// send writes s as it is.
func (c *rawClient) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, s); err != nil {
		c.t.Fatalf("write %.40q: %v", s, err)
	}
}

// reply reads one reply, however many lines it has.
func (c *rawClient) reply() (int, string, error) {
	return c.r.ReadResponse(0)
}

// want reads one reply and fails unless its code is code.
func (c *rawClient) want(code int, what string) string {
	c.t.Helper()
	got, msg, err := c.reply()
	if err != nil || got != code {
		c.t.Fatalf("%s: reply %d %q (err %v), want %d", what, got, msg, err, code)
	}
	return msg
}

// envelope sends EHLO, MAIL and RCPT and checks their replies.
func (c *rawClient) envelope(rcpt string) {
	c.t.Helper()
	c.send("EHLO raw.test\r\n")
	c.want(250, "EHLO")
	c.mail(rcpt)
}

func (c *rawClient) mail(rcpt string) {
	c.t.Helper()
	c.send("MAIL FROM:<a@sender.test>\r\n")
	c.want(250, "MAIL")
	c.send("RCPT TO:<" + rcpt + ">\r\n")
	c.want(250, "RCPT")
}

func rawOf(t *testing.T, db interface {
	Raw(context.Context, string) ([]byte, error)
}, id string) string {
	t.Helper()
	raw, err := db.Raw(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A BDAT chunk cut short by a disconnect is not a message: nothing is
// stored, as for DATA (issue 15).
func TestBDATCutShortStoresNothing(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{}))
	c.envelope("cut@inbox.test")
	c.send("BDAT 100000 LAST\r\n" + "Subject: cut\r\n\r\n" + strings.Repeat("x", 42) + "\r\n")
	c.conn.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(c.r.R) // the daemon hangs up once it has dealt with the chunk
	if strings.Contains(string(got), "250") {
		t.Errorf("a cut-off chunk got %q, want no 250", got)
	}
	if es := list(t, db, "cut"); len(es) != 0 {
		t.Errorf("a chunk cut short stored %+v, want nothing", es)
	}
}

// Whole chunks make one message, and the session goes on.
func TestBDATChunks(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{}))
	c.envelope("chunks@inbox.test")
	first := "Subject: chunks\r\n\r\n.one\r\n" // no dot-stuffing in BDAT
	second := "two\r\n"
	c.send("BDAT " + strconv.Itoa(len(first)) + "\r\n" + first)
	c.want(250, "first BDAT")
	c.send("BDAT " + strconv.Itoa(len(second)) + " LAST\r\n" + second)
	c.want(250, "BDAT LAST")
	c.mail("chunks@inbox.test")
	c.send("BDAT 5 LAST\r\nx\r\n\r\n")
	c.want(250, "BDAT on the same connection")
	es := list(t, db, "chunks")
	if len(es) != 2 {
		t.Fatalf("stored %d emails, want 2", len(es))
	}
	if raw := rawOf(t, db, es[1].ID); !strings.HasSuffix(raw, "\r\n"+first+second) {
		t.Errorf("raw = %q, want it to end with the two chunks as sent", raw)
	}
}

// SPEC §2: <CRLF>.<CRLF> ends DATA whatever precedes it, a bare CR
// included; a bare CR or LF is never a line end around the final dot.
func TestDataEnd(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		stored     string // the message as kept, after the Received header
	}{
		{"bare CR before the end", "Subject: cr\r\n\r\nends in CR\r\r\n.\r\n", "Subject: cr\r\n\r\nends in CR\r\r\n"},
		{"bare CRs, then a stuffed dot", "Subject: cr\r\n\r\na\r\r\r\n..b\r\n.\r\n", "Subject: cr\r\n\r\na\r\r\r\n.b\r\n"},
		{"stuffed dot", "Subject: dot\r\n\r\n..leading\r\n.\r\n", "Subject: dot\r\n\r\n.leading\r\n"},
		{"empty", ".\r\n", ""},
		{"LF dot CRLF is data", "Subject: s\r\n\r\na\n.\r\nMAIL FROM:<x@evil.test>\r\nb\r\n.\r\n", "Subject: s\r\n\r\na\n.\r\nMAIL FROM:<x@evil.test>\r\nb\r\n"},
		{"CR dot CRLF is data", "Subject: s\r\n\r\na\r.\r\nMAIL FROM:<x@evil.test>\r\nb\r\n.\r\n", "Subject: s\r\n\r\na\r.\r\nMAIL FROM:<x@evil.test>\r\nb\r\n"},
		{"CRLF dot LF is data", "Subject: s\r\n\r\na\r\n.\nMAIL FROM:<x@evil.test>\r\nb\r\n.\r\n", "Subject: s\r\n\r\na\r\n\nMAIL FROM:<x@evil.test>\r\nb\r\n"},
		{"CRLF dot CR is data", "Subject: s\r\n\r\na\r\n.\rMAIL FROM:<x@evil.test>\r\nb\r\n.\r\n", "Subject: s\r\n\r\na\r\n\rMAIL FROM:<x@evil.test>\r\nb\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			c := dialRaw(t, startDaemon(t, db, Options{}))
			c.envelope("end@inbox.test")
			c.send("DATA\r\n")
			c.want(354, "DATA")
			c.send(tc.data)
			c.want(250, "end of data")
			// The session goes on, and nothing of the data was read as a command.
			c.send("NOOP\r\n")
			c.want(250, "NOOP after the message")
			es := list(t, db, "end")
			if len(es) != 1 {
				t.Fatalf("stored %d emails, want 1", len(es))
			}
			raw := rawOf(t, db, es[0].ID)
			if _, msg, _ := strings.Cut(raw, "+0000\r\n"); msg != tc.stored {
				t.Errorf("stored %q, want %q", msg, tc.stored)
			}
		})
	}
}

// SPEC §2: a data line over max_line_length is a permanent 554 5.6.0 at
// the end of the data; nothing is stored and the session goes on.
func TestLongLineInData(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{}))
	c.envelope("long@inbox.test")
	c.send("DATA\r\n")
	c.want(354, "DATA")
	c.send("Subject: long\r\n\r\n" + strings.Repeat("a", 3000) + "\r\nafter\r\n.\r\n")
	if msg := c.want(554, "DATA with a 3000-byte line"); !strings.HasPrefix(msg, "5.6.0 ") {
		t.Errorf("reply text %q, want the enhanced code 5.6.0", msg)
	}
	// A line exactly at the limit is fine, on the same connection.
	c.mail("long@inbox.test")
	c.send("DATA\r\n")
	c.want(354, "second DATA")
	c.send("Subject: fits\r\n\r\n" + strings.Repeat("b", 2000) + "\r\n.\r\n")
	c.want(250, "second message")
	es := list(t, db, "long")
	if len(es) != 1 || es[0].Subject == nil || *es[0].Subject != "fits" {
		t.Errorf("stored %+v, want only the second message", es)
	}
}

// A command line over the limit still ends the connection with 500.
func TestLongCommandLine(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{}))
	c.send("EHLO raw.test\r\n")
	c.want(250, "EHLO")
	c.send("MAIL FROM:<" + strings.Repeat("a", 3000) + "@sender.test>\r\n")
	c.want(500, "a 3000-byte command")
	if got, err := io.ReadAll(c.r.R); err != nil || len(got) != 0 {
		t.Errorf("after the 500 read %q, %v; want the connection closed", got, err)
	}
}

// RFC 1870: a declared SIZE over the limit is 552, however many digits it
// has.
func TestDeclaredSize(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{}))
	c.send("EHLO raw.test\r\n")
	c.want(250, "EHLO")
	for _, size := range []string{"99999999999", "4294967296", "10485761", "99999999999999999999999"} {
		c.send("MAIL FROM:<a@b.test> SIZE=" + size + "\r\n")
		c.want(552, "SIZE="+size)
	}
	c.send("MAIL FROM:<a@b.test> size=10485760 BODY=8BITMIME\r\n")
	c.want(250, "SIZE at the limit")
}

func TestTooManyConnectionsFromOneAddress(t *testing.T) {
	db := openDB(t)
	reg := prometheus.NewRegistry()
	addr := startDaemon(t, db, Options{MaxConnections: 100, MaxConnsPerIP: 10, Metrics: reg})
	var open []*rawClient
	for range 10 {
		open = append(open, dialRaw(t, addr))
	}
	eleventh, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer eleventh.Close()
	eleventh.SetDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(eleventh)
	if want := "421 4.7.0 Too many connections from your address, try again later\r\n"; string(got) != want {
		t.Errorf("11th connection from one address got %q, want %q", got, want)
	}
	if n := counterValue(t, reg, "burner_smtp_connections_refused_total", "per_address"); n != 1 {
		t.Errorf("refused{reason=per_address} = %v, want 1", n)
	}
	// A slot comes back when one of the ten quits.
	open[0].send("QUIT\r\n")
	open[0].want(221, "QUIT")
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		line, err := textproto.NewReader(bufio.NewReader(conn)).ReadLine()
		conn.Close()
		if err == nil && strings.HasPrefix(line, "220 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot within 10s after a connection quit: %q, %v", line, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counterValue reads the counter of metric name with that reason.
func counterValue(t *testing.T, reg *prometheus.Registry, name, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{reason=%q} in the registry", name, reason)
	return 0
}

// The wire sits above TLS: after STARTTLS the bare-CR end and the long
// line are handled as in plaintext.
func TestDataEndAfterSTARTTLS(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{TLSConfig: selfSigned(t)}))
	c.send("EHLO raw.test\r\n")
	c.want(250, "EHLO")
	c.send("STARTTLS\r\n")
	c.want(220, "STARTTLS")
	tc := tls.Client(c.conn, &tls.Config{InsecureSkipVerify: true})
	c.conn, c.r = tc, textproto.NewReader(bufio.NewReader(tc))
	c.envelope("tls@inbox.test")
	c.send("DATA\r\n")
	c.want(354, "DATA")
	c.send("Subject: long\r\n\r\n" + strings.Repeat("a", 3000) + "\r\n.\r\n")
	c.want(554, "a long line over TLS")
	c.mail("tls@inbox.test")
	c.send("DATA\r\n")
	c.want(354, "DATA")
	c.send("Subject: cr\r\n\r\nends in CR\r\r\n.\r\n")
	c.want(250, "bare CR before the end, over TLS")
	es := list(t, db, "tls")
	if len(es) != 1 {
		t.Fatalf("stored %d emails, want 1", len(es))
	}
	if raw := rawOf(t, db, es[0].ID); !strings.Contains(raw, " with ESMTPS;") || !strings.HasSuffix(raw, "ends in CR\r\r\n") {
		t.Errorf("raw = %q, want ESMTPS and the message as sent", raw)
	}
}

func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}
