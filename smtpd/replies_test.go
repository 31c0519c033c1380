package smtpd

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	netsmtp "net/smtp"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// lines reads one reply as its lines are sent, without their CRLF.
func (c *rawClient) lines() []string {
	c.t.Helper()
	var got []string
	for {
		line, err := c.r.ReadLine()
		if err != nil {
			c.t.Fatalf("reading a reply after %q: %v", got, err)
		}
		got = append(got, line)
		if len(line) < 4 || line[3] != '-' {
			return got
		}
	}
}

// say sends the command line cmd and checks that the reply's lines are
// want.
func (c *rawClient) say(cmd string, want ...string) {
	c.t.Helper()
	c.sayRaw(cmd+"\r\n", want...)
}

// sayRaw sends data as it is and checks that the reply's lines are want.
func (c *rawClient) sayRaw(data string, want ...string) {
	c.t.Helper()
	c.send(data)
	if got := c.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		c.t.Errorf("%.60q: reply %q, want %q", data, got, want)
	}
}

// sayLike sends data as it is and checks that the reply is one line that
// matches re, and returns it.
func (c *rawClient) sayLike(data, re string) string {
	c.t.Helper()
	c.send(data)
	got := c.lines()
	if len(got) != 1 || !regexp.MustCompile("^"+re+"$").MatchString(got[0]) {
		c.t.Errorf("%.60q: reply %q, want one line like %q", data, got, re)
		return ""
	}
	return got[0]
}

// uuid7 matches a session id.
const uuid7 = `[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}`

// TestRepliesPinned pins every reply burner words itself, on the wire,
// against the go-smtp in go.mod: after a go-smtp upgrade that changes its
// words, reword no longer knows them, they go out as go-smtp has them,
// and this test fails.
func TestRepliesPinned(t *testing.T) {
	db := openDB(t)
	addr := startDaemon(t, db, Options{Hostname: "mx.burner.test", Domains: []string{"inbox.test"}, MaxMessageBytes: 1 << 20})
	c := dialRaw(t, addr)
	c.say("EHLO client.test", "250-mx.burner.test", "250-PIPELINING", "250-8BITMIME", "250-ENHANCEDSTATUSCODES", "250-CHUNKING",
		"250-SMTPUTF8", "250-SIZE 1048576", "250 LIMITS RCPTMAX=100")
	c.say("NOOP", "250 2.0.0 OK")
	c.say("VRFY alice", "252 2.5.0 Cannot verify users here; RCPT tells which addresses take mail")
	c.say("AUTH", "503 5.5.1 Authentication not enabled: burner only receives mail")
	c.say("AUTH PLAIN AGFsaWNlAHNlY3JldA==", "503 5.5.1 Authentication not enabled: burner only receives mail")
	c.say("RCPT TO:<alice@inbox.test>", "503 5.5.1 Need MAIL command")
	c.say("DATA", "503 5.5.1 Need MAIL command")
	c.say("MAIL FROM:<app@sender.test>", "250 2.1.0 OK")
	c.say("DATA", "503 5.5.1 Need RCPT command")
	c.say("RCPT TO:<alice@elsewhere.test>", "550 5.1.1 Relay access denied: not an inbox domain here")
	c.say("DATA", "554 5.5.1 No valid recipients") // RFC 2920 §3.1
	c.sayRaw("BDAT 5 LAST\r\nabc\r\n", "554 5.5.1 No valid recipients")
	c.say("RSET", "250 2.0.0 OK")
	c.say("MAIL FROM:<app@sender.test>", "250 2.1.0 OK")
	c.say("RCPT TO:<alice@inbox.test>", "250 2.1.5 OK")
	c.say("DATA", "354 End data with <CR><LF>.<CR><LF>")
	reply := c.sayLike("Subject: pinned\r\n\r\nhi\r\n.\r\n", "250 2.0.0 OK "+uuid7)
	// The Received field names the session the 250 names.
	es := list(t, db, "alice")
	if len(es) != 1 {
		t.Fatalf("stored %d emails, want 1", len(es))
	}
	if id := strings.TrimPrefix(reply, "250 2.0.0 OK "); !strings.Contains(rawOf(t, db, es[0].ID), " id "+id+"\r\n\tfor <alice@inbox.test>;") {
		t.Errorf("raw = %q, want a Received field with id %s", rawOf(t, db, es[0].ID), id)
	}
	c.say("MAIL FROM:<app@sender.test>", "250 2.1.0 OK")
	c.say("RCPT TO:<alice@inbox.test>", "250 2.1.5 OK")
	c.sayRaw("BDAT 10\r\nSubject: b", "250 2.0.0 OK, 10 octets received")
	next := c.sayLike("BDAT 9 LAST\r\nat\r\n\r\nx\r\n", "250 2.0.0 OK "+uuid7)
	if next == reply {
		t.Errorf("two messages got the same reply %q, want each its own session id", reply)
	}
	c.say("HELO client.test", "250 mx.burner.test")
	c.say("QUIT", "221 2.0.0 mx.burner.test closing connection")

	// Errors that end the connection.
	c = dialRaw(t, addr)
	c.send("EHLO client.test\r\n")
	c.lines() // pinned above
	for range 3 {
		c.say("FROB", "500 5.5.2 Syntax errors, FROB command unrecognized")
	}
	c.say("FROB", "500 5.5.2 Syntax errors, FROB command unrecognized")
	if got := c.lines(); len(got) != 1 || got[0] != "421 4.7.0 mx.burner.test Too many errors, closing connection" {
		t.Errorf("after the fourth error: %q, want burner's 421", got)
	}

	c = dialRaw(t, addr)
	c.send("EHLO client.test\r\n")
	c.lines()
	c.say("NOOP "+strings.Repeat("x", 2500), "500 5.5.2 Line too long, closing connection")
}

func TestIdleTimeoutReply(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{Hostname: "mx.burner.test", CommandTimeout: 200 * time.Millisecond}))
	c.send("EHLO client.test\r\n")
	c.lines()
	if got := c.lines(); len(got) != 1 || got[0] != "421 4.4.2 mx.burner.test Idle timeout, closing connection" {
		t.Errorf("an idle session got %q, want burner's 421", got)
	}
}

// After STARTTLS, AUTH is offered no mechanism: go-smtp's 504 for an
// unknown mechanism is burner's "not enabled" too.
func TestAuthOverTLSReply(t *testing.T) {
	db := openDB(t)
	c := dialRaw(t, startDaemon(t, db, Options{TLSConfig: selfSigned(t)}))
	c.send("EHLO raw.test\r\n")
	c.lines()
	c.say("STARTTLS", "220 2.0.0 Ready to start TLS")
	tc := tls.Client(c.conn, &tls.Config{InsecureSkipVerify: true})
	c.conn, c.r = tc, textproto.NewReader(bufio.NewReader(tc))
	c.send("EHLO raw.test\r\n")
	c.lines()
	c.say("AUTH PLAIN AGFsaWNlAHNlY3JldA==", "503 5.5.1 Authentication not enabled: burner only receives mail")
}

// TestRepliesInGoSMTP holds each reply reword knows to go-smtp's source in
// the module cache, at the version in go.mod: the replies no client can
// provoke (a read error that is not a timeout) are pinned here.
func TestRepliesInGoSMTP(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/emersion/go-smtp").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/emersion/go-smtp: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	var src []byte
	for _, f := range []string{"conn.go", "server.go", "backend.go"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	for _, line := range [][]byte{goEHLO, goHELO, goMail, goRcpt, goData, goQueued, goContinue, goReset, goNoop, goQuit, goVrfy,
		goNoRcpt, goNoMail, goAuthTLS, goAuthMech, goAuthParam, goIdle, goErrors, goLongLine, goConnError} {
		// go-smtp writes the code, the enhanced code and the text apart:
		// the text must be in its source, and each code beside it.
		code, rest, _ := bytes.Cut(line, []byte{' '})
		if code[len(code)-1] == '-' || len(code) > 3 {
			code, rest = code[:3], line[4:]
		}
		text := rest
		enhanced := []byte(nil)
		if e, t, ok := bytes.Cut(rest, []byte{' '}); ok && len(e) > 0 && e[0] >= '2' && e[0] <= '5' && bytes.Count(e, []byte{'.'}) == 2 {
			enhanced, text = e, t
		}
		i := bytes.Index(src, text)
		if i < 0 {
			t.Errorf("reword knows %q, but go-smtp's source has no %q: port replies.go to this go-smtp", line, text)
			continue
		}
		near := src[max(0, i-80):i]
		if !bytes.Contains(near, code) {
			t.Errorf("reword knows %q, but go-smtp's source has %q without the code %s before it", line, text, code)
		}
		if enhanced != nil && !bytes.Contains(near, bytes.ReplaceAll(enhanced, []byte{'.'}, []byte(", "))) {
			t.Errorf("reword knows %q, but go-smtp's source has %q without the enhanced code %s before it", line, text, enhanced)
		}
	}
}

// RFC 3848 and RFC 6531: the Received field's protocol says how the
// message came: EHLO or HELO, TLS, SMTPUTF8.
func TestReceivedProtocol(t *testing.T) {
	db := openDB(t)
	addr := startDaemon(t, db, Options{TLSConfig: selfSigned(t)})
	send := func(c *rawClient, mail, rcpt string) {
		t.Helper()
		c.say(mail, "250 2.1.0 OK")
		c.say("RCPT TO:<"+rcpt+">", "250 2.1.5 OK")
		c.say("DATA", "354 End data with <CR><LF>.<CR><LF>")
		c.sayLike("Subject: proto\r\n\r\nhi\r\n.\r\n", "250 2.0.0 OK "+uuid7)
	}
	c := dialRaw(t, addr)
	c.say("HELO old.test", "250 localhost")
	send(c, "MAIL FROM:<a@sender.test>", "helo@inbox.test")
	c.send("EHLO new.test\r\n")
	c.lines()
	send(c, "MAIL FROM:<a@sender.test> SMTPUTF8", "utf8@inbox.test")
	c.say("STARTTLS", "220 2.0.0 Ready to start TLS")
	tc := tls.Client(c.conn, &tls.Config{InsecureSkipVerify: true})
	c.conn, c.r = tc, textproto.NewReader(bufio.NewReader(tc))
	c.send("EHLO new.test\r\n")
	c.lines()
	send(c, "MAIL FROM:<a@sender.test>", "tls@inbox.test")
	send(c, "MAIL FROM:<a@sender.test> SMTPUTF8", "utf8tls@inbox.test")
	for _, tc := range []struct{ inbox, helo, with string }{
		{"helo", "old.test", "SMTP"}, {"utf8", "new.test", "UTF8SMTP"}, {"tls", "new.test", "ESMTPS"}, {"utf8tls", "new.test", "UTF8SMTPS"},
	} {
		es := list(t, db, tc.inbox)
		if len(es) != 1 {
			t.Fatalf("%s holds %d emails, want 1", tc.inbox, len(es))
		}
		if raw := rawOf(t, db, es[0].ID); !receivedAs(raw, tc.helo, "127.0.0.1", "localhost", tc.with, tc.inbox+"@inbox.test") {
			t.Errorf("%s: raw = %.200q, want with %s", tc.inbox, raw, tc.with)
		}
	}
}

// Go's net/smtp client reads burner's replies as any client would: a
// refused recipient, then the DATA after it (RFC 2920), then a message.
func TestRepliesToNetSMTP(t *testing.T) {
	db := openDB(t)
	c, err := netsmtp.Dial(startDaemon(t, db, Options{Domains: []string{"inbox.test"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mail("a@sender.test"); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		what string
		err  error
		code int
		msg  string
	}{
		{"RCPT outside the domains", c.Rcpt("x@elsewhere.test"), 550, "5.1.1 Relay access denied: not an inbox domain here"},
		{"DATA after it", func() error { _, err := c.Data(); return err }(), 554, "5.5.1 No valid recipients"},
	} {
		var te *textproto.Error
		if !errors.As(step.err, &te) || te.Code != step.code || te.Msg != step.msg {
			t.Errorf("%s: %v, want %d %s", step.what, step.err, step.code, step.msg)
		}
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("a@sender.test"); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("net@inbox.test"); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, simple)
	if err := w.Close(); err != nil {
		t.Fatalf("end of data: %v", err)
	}
	if err := c.Quit(); err != nil {
		t.Errorf("QUIT: %v", err)
	}
	if es := list(t, db, "net"); len(es) != 1 {
		t.Errorf("stored %d emails, want 1", len(es))
	}
}
