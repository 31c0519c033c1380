package smtpd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/prometheus/client_golang/prometheus"

	"burner/internal/benchdata"
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
// stored, as for DATA (docs/hostile-mail.md).
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

// spec §2: <CRLF>.<CRLF> ends DATA whatever precedes it, a bare CR
// included; a bare CR or LF is never a line end around the final dot. A
// bare LF ends a line for the dot-stuffing, as in Postfix.
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
		{"LF dot LF is data", "Subject: s\n\na\n.\nMAIL FROM:<x@evil.test>\nb\r\n.\r\n", "Subject: s\n\na\n.\nMAIL FROM:<x@evil.test>\nb\r\n"},
		{"stuffed dot after LF", "Subject: lf\n\n..leading\n\r\n.\r\n", "Subject: lf\n\n.leading\n\r\n"},
		{"unstuffed dot after LF, as curl sends it", "Subject: lf\n\n.leading\n\r\n.\r\n", "Subject: lf\n\n.leading\n\r\n"},
		{"LF lines, then CRLF dot CRLF", "Subject: lf\n\none\ntwo\n\r\n.\r\n", "Subject: lf\n\none\ntwo\n\r\n"},
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

// spec §2: message lines have no length limit of their own, and LF-only
// mail is taken as it is: each is stored byte for byte, on one connection.
func TestLongLinesInData(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{}))
	c.send("EHLO raw.test\r\n")
	c.want(250, "EHLO")
	var lfOnly strings.Builder
	lfOnly.WriteString("From: News <news@sender.test>\nSubject: lf only\nContent-Type: text/plain\n\n")
	for lfOnly.Len() < 4096 {
		lfOnly.WriteString("A newsletter line written in an editor that ends lines with LF.\n")
	}
	html := "From: a@sender.test\r\nSubject: one-line html\r\nContent-Type: text/html\r\n\r\n<html><body>" +
		strings.Repeat("<p>one long line &amp; more</p>", 250<<10/31) + "</body></html>\r\n"
	for _, tc := range []struct{ name, sent, stored string }{
		{"LF-only", lfOnly.String() + "\r\n.\r\n", lfOnly.String() + "\r\n"},
		{"250 KB HTML line", html + ".\r\n", html},
		{"3000-byte line", "Subject: long\r\n\r\n" + strings.Repeat("a", 3000) + "\r\nafter\r\n.\r\n", "Subject: long\r\n\r\n" + strings.Repeat("a", 3000) + "\r\nafter\r\n"},
		// Every buffer of the wire starts with a dot somewhere in the line:
		// none of them is taken for stuffing, nor ".\r\n" for the end.
		{"dots and bare CRs", "Subject: dots\r\n\r\n." + strings.Repeat(".\r", 60000) + "\n.\r\n", "Subject: dots\r\n\r\n" + strings.Repeat(".\r", 60000) + "\n"},
	} {
		c.mail("long@inbox.test")
		c.send("DATA\r\n")
		c.want(354, "DATA for "+tc.name)
		c.send(tc.sent)
		c.want(250, tc.name)
		es := list(t, db, "long")
		if raw := rawOf(t, db, es[0].ID); !strings.HasSuffix(raw, "+0000\r\n"+tc.stored) {
			t.Errorf("%s: stored %d bytes, want the %d sent after the Received header", tc.name, len(raw), len(tc.stored))
		}
	}
	// BDAT: no dot-stuffing and no line limit; the chunk is the message.
	c.mail("long@inbox.test")
	c.send("BDAT " + strconv.Itoa(len(html)) + " LAST\r\n" + html)
	c.want(250, "BDAT of a 250 KB line")
	es := list(t, db, "long")
	if raw := rawOf(t, db, es[0].ID); !strings.HasSuffix(raw, "+0000\r\n"+html) {
		t.Errorf("BDAT: stored %d bytes, want the %d sent after the Received header", len(raw), len(html))
	}
	if len(es) != 5 {
		t.Errorf("stored %d emails, want 5", len(es))
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
	addr := startDaemon(t, db, Options{MaxConnections: 100, MaxConnsPerIP: 10, TrustedNetworks: []netip.Prefix{}, Metrics: reg})
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
	if want := "421 4.7.0 Too many connections from your address (limit 10 per address), try again later\r\n"; string(got) != want {
		t.Errorf("11th connection from one address got %q, want %q", got, want)
	}
	if n := counter(t, reg, "burner_smtp_connections_refused_total", "reason", "per_address"); n != 1 {
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
	c.want(250, "a long line over TLS")
	c.mail("tls@inbox.test")
	c.send("DATA\r\n")
	c.want(354, "DATA")
	c.send("Subject: cr\r\n\r\nends in CR\r\r\n.\r\n")
	c.want(250, "bare CR before the end, over TLS")
	es := list(t, db, "tls")
	if len(es) != 2 {
		t.Fatalf("stored %d emails, want 2", len(es))
	}
	if raw := rawOf(t, db, es[0].ID); !receivedAs(raw, "raw.test", "127.0.0.1", "localhost", "ESMTPS", "tls@inbox.test") || !strings.HasSuffix(raw, "ends in CR\r\r\n") {
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

// endOfData is readData written plainly, line by line, for FuzzReadData to
// hold the wire to: a line ends at each LF; a dot that starts a line is
// stuffing after a CRLF (or at the start), and after a bare LF when another
// dot follows it; ".\r\n" after a CRLF (or at the start) ends the data.
func endOfData(data string) (msg, rest string, ok bool) {
	var b strings.Builder
	crlfStart := true
	for {
		line, after, found := strings.Cut(data, "\n")
		if !found {
			return "", "", false
		}
		line += "\n"
		data = after
		if crlfStart && line == ".\r\n" {
			return b.String(), data, true
		}
		if crlfStart || strings.HasPrefix(line, "..") {
			line = strings.TrimPrefix(line, ".")
		}
		crlfStart = strings.HasSuffix(line, "\r\n")
		b.WriteString(line)
	}
}

// FuzzReadData reads data through wires of several buffer sizes, so that
// buffers start and end everywhere in lines, dots, CRs and LFs, and checks
// that each reads what endOfData reads, and leaves the rest unread.
func FuzzReadData(f *testing.F) {
	for _, s := range []string{
		"a\r\n.\r\n", "a\n.\r\nb\r\n.\r\n", "a\r\r\n.\r\n", "..x\r\n.\r\nNOOP\r\n", "a\r\n.\nb\r\n.\r\n",
		strings.Repeat(".\r", 40) + "\n.\r\n", strings.Repeat("x", 100) + "\n..\n\r\n.\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		data += "\r\n.\r\nNOOP\r\n" // every input ends
		want, rest, ok := endOfData(data)
		if !ok {
			t.Fatalf("endOfData(%q) found no end", data)
		}
		for _, size := range []int{16, 17, 19, 4096} {
			w := &wire{in: bufio.NewReaderSize(strings.NewReader(data), size)}
			var buf bytes.Buffer
			if err := w.readData(&buf, 1<<20); err != nil {
				t.Fatalf("readData(%q) with a %d-byte buffer: %v", data, size, err)
			}
			if buf.String() != want {
				t.Fatalf("readData(%q) with a %d-byte buffer read %q, want %q", data, size, buf.String(), want)
			}
			if left, _ := io.ReadAll(w.in); string(left) != rest {
				t.Fatalf("readData(%q) with a %d-byte buffer left %q, want %q", data, size, left, rest)
			}
		}
	})
}

// BenchmarkReadData reads 10 MiB of data through the wire as a DATA
// command does, in the shapes that cost it most: one line (which spec §2
// now allows), lines at the old 2000-octet limit, and the shortest lines,
// empty or stuffed (a line that starts with a dot costs a look of its own).
func BenchmarkReadData(b *testing.B) {
	const size = 10 << 20
	for _, tc := range []struct{ name, line string }{
		{"one-line", strings.Repeat("a", size-2) + "\r\n"},
		{"one-line-LF", strings.Repeat("a", size-1) + "\n"},
		{"lines-2000", strings.Repeat("a", 2000) + "\r\n"},
		{"empty-lines", "\r\n"},
		{"stuffed-lines", "..\r\n"},
		{"stuffed-LF-lines", "..\n"},
		{"LF-lines", "\n"},
	} {
		data := []byte(strings.Repeat(tc.line, size/len(tc.line)) + "\r\n.\r\n")
		b.Run(tc.name, func(b *testing.B) {
			r := bytes.NewReader(data)
			var buf bytes.Buffer
			buf.Grow(size + 64)
			in := bufio.NewReaderSize(r, 4096)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(data)
				in.Reset(r)
				buf.Reset()
				w := &wire{in: in}
				if err := w.readData(&buf, size+16); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOneLineMessage stores a 10 MiB message whose body is one line
// through the real daemon over SMTP into a real data file, as
// BenchmarkHostile does for the shapes that were allowed before (compare
// cpu-ms/op with its worst).
func BenchmarkOneLineMessage(b *testing.B) {
	const size = 10<<20 - 4096
	for _, tc := range []struct{ name, head, line string }{
		{"plain", "Content-Type: text/plain\r\n", "https://e.x/( & < "},
		{"html", "Content-Type: text/html\r\n", "<p><i>&amp;</i></p>"},
	} {
		head := "From: a@b.test\r\nTo: t@inbox.test\r\nSubject: one line\r\nMIME-Version: 1.0\r\n" + tc.head + "\r\n"
		raw := []byte(head + strings.Repeat(tc.line, (size-len(head))/len(tc.line)) + "\r\n")
		b.Run(tc.name, func(b *testing.B) {
			db := openDB(b)
			c := dial(b, startDaemon(b, db, Options{}))
			cpu := benchdata.CPUTime()
			peak := benchdata.StartPeak(b)
			b.ResetTimer()
			for b.Loop() {
				if err := c.Mail("a@b.test", &smtp.MailOptions{Size: int64(len(raw))}); err != nil {
					b.Fatal(err)
				}
				if err := c.Rcpt("t@inbox.test", nil); err != nil {
					b.Fatal(err)
				}
				w, err := c.Data()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.Write(raw); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(benchdata.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(peak.MB(), "peak-MB")
		})
	}
}

// counter reads the counter name of reg: the one with the label given as
// name and value, or the unlabelled one; tb fails without it.
func counter(tb testing.TB, reg *prometheus.Registry, name string, label ...string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(label) == 0 && len(m.GetLabel()) == 0 {
				return m.GetCounter().GetValue()
			}
			for _, l := range m.GetLabel() {
				if len(label) == 2 && l.GetName() == label[0] && l.GetValue() == label[1] {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	tb.Fatalf("no %s%v in the registry", name, label)
	return 0
}
