package smtpd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"burner/message"
	"burner/storage"
	"burner/storage/boltdb"
)

func openDB(t testing.TB) *boltdb.DB {
	t.Helper()
	db, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// startDaemon runs the real daemon on a loopback port and returns its
// address.
func startDaemon(t testing.TB, db storage.Deliverer, opts Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if tt, ok := t.(*testing.T); ok {
		log = slog.New(slog.NewTextHandler(tt.Output(), nil))
	}
	srv := New(db, opts, log)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v", err)
		}
	})
	return ln.Addr().String()
}

func dial(t testing.TB, addr string) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatalf("smtp.Dial(%s): %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	var smtpErr *smtp.SMTPError
	if !errors.As(err, &smtpErr) || smtpErr.Code != code {
		t.Errorf("%s: err = %v, want a %d reply", what, err, code)
	}
}

// list returns the emails db holds for the inbox local, on either engine.
func list(t *testing.T, db storage.Engine, local string) []storage.Email {
	t.Helper()
	es, err := db.List(context.Background(), storage.Query{LocalPart: local})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// receivedAs reports whether raw starts with the Received field burner
// writes, with the HELO name, client address, host, protocol and, when
// not "", the recipient given, and a session id.
func receivedAs(raw, helo, ip, host, with, rcpt string) bool {
	re := "^Received: from " + regexp.QuoteMeta(helo) + " \\(\\[" + regexp.QuoteMeta(ip) + "\\]\\)\r\n\tby " + regexp.QuoteMeta(host) +
		" \\(burner\\) with " + with + " id [0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}"
	if rcpt != "" {
		re += "\r\n\tfor <" + regexp.QuoteMeta(rcpt) + ">"
	}
	re += ";\r\n\t[A-Z][a-z][a-z], [0-9]{1,2} [A-Z][a-z][a-z] [0-9]{4} [0-9:]{8} [+-][0-9]{4}\r\n"
	return regexp.MustCompile(re).MatchString(raw)
}

const simple = "From: Ann Example <ann@sender.test>\r\nSubject: Hello\r\n\r\nHi there\r\n"

func TestDeliverOnePerRecipient(t *testing.T) {
	db := openDB(t)
	addr := startDaemon(t, db, Options{Hostname: "mx.burner.test", Domains: []string{"Inbox.Test"}})
	c := dial(t, addr)
	if err := c.SendMail("bounce@sender.test", []string{"alice@inbox.test", "Bob@INBOX.test", "alice@inbox.test"}, strings.NewReader(simple)); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	alice, bob := list(t, db, "alice"), list(t, db, "bob")
	if len(alice) != 1 || len(bob) != 1 {
		t.Fatalf("stored %d for alice and %d for bob, want one each (a repeated RCPT is one copy)", len(alice), len(bob))
	}
	a, b := alice[0], bob[0]
	if a.ID == b.ID || a.To != "alice@inbox.test" || b.To != "Bob@INBOX.test" {
		t.Errorf("copies = %+v and %+v; want distinct ids and each RCPT address as given", a, b)
	}
	if a.From != "ann@sender.test" || a.FromName != "Ann Example" || a.Subject == nil || *a.Subject != "Hello" || a.Body == nil || !strings.Contains(*a.Body, "Hi there") {
		t.Errorf("stored email = %+v, want the parsed From, name, subject and body", a)
	}
	raw, err := db.Raw(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Two recipients: the Received field names neither (each copy would
	// show the other).
	if !receivedAs(string(raw), "localhost", "127.0.0.1", "mx.burner.test", "ESMTP", "") || !strings.HasSuffix(string(raw), simple) {
		t.Errorf("raw = %q; want our Received header, then the message as sent", raw)
	}
}

func TestRcptRefusals(t *testing.T) {
	db := openDB(t)
	addr := startDaemon(t, db, Options{Domains: []string{"inbox.test"}})
	c := dial(t, addr)
	if err := c.Mail("x@sender.test", nil); err != nil {
		t.Fatal(err)
	}
	for _, rcpt := range []string{
		"alice@elsewhere.test",                  // not an inbox domain
		"alice@sub.inbox.test",                  // not an inbox domain either
		"al!ce@inbox.test",                      // outside the API's alphabet
		strings.Repeat("a", 65) + "@inbox.test", // RFC 5321: at most 64
	} {
		wantCode(t, fmt.Sprintf("RCPT TO:<%s>", rcpt), c.Rcpt(rcpt, nil), 550)
	}
	// go-smtp refuses these as bad syntax (501) before they reach us.
	for _, rcpt := range []string{"al ice@inbox.test", "postmaster"} {
		wantCode(t, fmt.Sprintf("RCPT TO:<%s>", rcpt), c.Rcpt(rcpt, nil), 501)
	}
	if err := c.Rcpt(strings.Repeat("a", 64)+"@inbox.test", nil); err != nil {
		t.Errorf("RCPT of a 64-character local part: %v", err)
	}
	if err := c.Rcpt("A.b-c_d+e@INBOX.TEST", nil); err != nil {
		t.Errorf("RCPT of a valid address: %v", err)
	}
}

func TestAnyDomainWhenNoneConfigured(t *testing.T) {
	db := openDB(t)
	c := dial(t, startDaemon(t, db, Options{}))
	if err := c.SendMail("", []string{"x@whatever.example"}, strings.NewReader("Subject: null sender\r\n\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	es := list(t, db, "x")
	if len(es) != 1 || es[0].From != "" || es[0].FromName != "" {
		t.Errorf("stored %+v; want one email with fromAddress \"\" (null sender, no From header)", es)
	}
}

func TestSizeLimit(t *testing.T) {
	db := openDB(t)
	c := dial(t, startDaemon(t, db, Options{MaxMessageBytes: 2048}))
	if ok, size := c.Extension("SIZE"); !ok || size != "2048" {
		t.Errorf("EHLO SIZE = %v %q, want 2048 advertised", ok, size)
	}
	big := "Subject: big\r\n\r\n" + strings.Repeat("0123456789abcdef\r\n", 200)
	wantCode(t, "DATA of 3.6 KB over a 2 KB limit", c.SendMail("a@sender.test", []string{"big@inbox.test"}, strings.NewReader(big)), 552)
	if es := list(t, db, "big"); len(es) != 0 {
		t.Errorf("an oversize message was stored: %+v", es)
	}
	// The session goes on: the next, smaller message is taken.
	c.Reset()
	if err := c.SendMail("a@sender.test", []string{"big@inbox.test"}, strings.NewReader(simple)); err != nil {
		t.Errorf("SendMail after a 552: %v", err)
	}
}

func TestMaxRecipients(t *testing.T) {
	db := openDB(t)
	c := dial(t, startDaemon(t, db, Options{MaxRecipients: 2}))
	if err := c.Mail("a@sender.test", nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := c.Rcpt(fmt.Sprintf("r%d@inbox.test", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, "third RCPT with max 2", c.Rcpt("r2@inbox.test", nil), 452)
}

// A storage failure is temporary: 451, so that the sender keeps the message
// and retries; and nothing half-written stays behind.
func TestStorageFailureIs451(t *testing.T) {
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := boltdb.Open(path, boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, startDaemon(t, db, Options{}))
	if err := c.Mail("a@sender.test", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("lost@inbox.test", nil); err != nil {
		t.Fatal(err)
	}
	db.Close() // the disk goes away between RCPT and DATA
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, simple)
	wantCode(t, "DATA with the file closed", w.Close(), 451)

	db, err = boltdb.Open(path, boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if es := list(t, db, "lost"); len(es) != 0 {
		t.Errorf("after a 451 the file holds %+v, want nothing", es)
	}
}

func TestTooManyConnections(t *testing.T) {
	db := openDB(t)
	// All from 127.0.0.1: the cap per address must not be what refuses.
	addr := startDaemon(t, db, Options{MaxConnections: 2, MaxConnsPerIP: 2})
	first, second := dial(t, addr), dial(t, addr)
	for _, c := range []*smtp.Client{first, second} {
		if err := c.Noop(); err != nil {
			t.Fatal(err)
		}
	}
	// The third is answered 421 in its greeting.
	third := dial(t, addr)
	err := third.Noop()
	wantCode(t, "third connection", err, 421)
	if err == nil || !strings.Contains(err.Error(), "Too many connections, try") {
		t.Errorf("third connection: %v, want the reply for the total cap", err)
	}
	// A slot comes back when a connection ends.
	second.Quit()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := dial(t, addr).Noop()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot within 10s after a connection quit: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDataFileFullIs452(t *testing.T) {
	db, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), boltdb.Options{Retention: storage.Retention{MaxBytes: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := dial(t, startDaemon(t, db, Options{}))
	big := "Subject: big\r\n\r\n" + strings.Repeat(strings.Repeat("x", 98)+"\r\n", 1000)
	wantCode(t, "DATA past the file's cap", c.SendMail("a@sender.test", []string{"full@inbox.test"}, strings.NewReader(big)), 452)
	if es := list(t, db, "full"); len(es) != 0 {
		t.Errorf("a refused message was stored: %+v", es)
	}
}

// A panic while handling one message costs that message a 451, not the
// daemon.
func TestPanicInSessionIs451(t *testing.T) {
	db := openDB(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(db, Options{}, slog.New(slog.NewTextHandler(t.Output(), nil)))
	srv.parser = &message.Parser{} // a nil bluemonday policy panics sanitizing HTML
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	for i := range 2 { // the second connection shows the daemon still serves
		c := dial(t, ln.Addr().String())
		html := "From: Ann Example <ann@sender.test>\r\nContent-Type: text/html\r\n\r\n<p>Hi there</p>\r\n"
		wantCode(t, fmt.Sprint("DATA that panics, try ", i), c.SendMail("a@sender.test", []string{"p@inbox.test"}, strings.NewReader(html)), 451)
	}
	if es := list(t, db, "p"); len(es) != 0 {
		t.Errorf("stored %+v after a panic, want nothing", es)
	}
}

func TestDataTimeout(t *testing.T) {
	db := openDB(t)
	addr := startDaemon(t, db, Options{DataTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A raw client, so that it can stall in the middle of DATA.
	io.WriteString(conn, "EHLO slow.test\r\nMAIL FROM:<a@sender.test>\r\nRCPT TO:<slow@inbox.test>\r\nDATA\r\nSubject: slow\r\n\r\nstarted but never ")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn) // until the daemon hangs up
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the daemon did not hang up on a stalled DATA within 10s; it said %q", got)
	}
	if !strings.HasSuffix(string(got), "354 End data with <CR><LF>.<CR><LF>\r\n421 4.4.2 Timeout or error reading the message, closing connection\r\n") {
		t.Errorf("a stalled DATA got %q; want 421 and the connection closed", got)
	}
	if es := list(t, db, "slow"); len(es) != 0 {
		t.Errorf("a timed-out message was stored: %+v", es)
	}
	if err := dial(t, addr).SendMail("a@sender.test", []string{"slow@inbox.test"}, strings.NewReader(simple)); err != nil {
		t.Errorf("SendMail after a timed-out one: %v", err)
	}
}

// TestNewWithoutLog: a nil logger discards, as server.New's does, rather
// than panic at the first session.
func TestNewWithoutLog(t *testing.T) {
	db := openDB(t)
	srv := New(db, Options{}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c := dial(t, ln.Addr().String())
	if err := c.SendMail("a@b.test", []string{"n@inbox.test"}, strings.NewReader("Subject: x\r\n\r\nhi\r\n")); err != nil {
		t.Errorf("SendMail to a daemon made with a nil log: %v", err)
	}
	c.Quit()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if err := <-done; err != nil {
		t.Errorf("Serve returned %v", err)
	}
}
