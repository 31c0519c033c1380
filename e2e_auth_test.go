package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/emersion/go-smtp"

	"burner/internal/dnstest"
	"burner/storage"
	"burner/storage/boltdb"
)

// TestMain keeps the DNS lookups of the verifications (spec §12) on this
// machine: every burner the tests start, in this process or in another
// (which inherits the environment), asks a loopback port where nothing
// listens and gets temperror at once, unless a test names a resolver of
// its own (t.Setenv: the environment overrides the config file).
func TestMain(m *testing.M) {
	if os.Getenv("BURNER_DNS_RESOLVER") == "" {
		if pc, err := net.ListenPacket("udp", "127.0.0.1:0"); err == nil {
			os.Setenv("BURNER_DNS_RESOLVER", pc.LocalAddr().String())
			pc.Close()
		}
	}
	os.Exit(m.Run())
}

// apiAuth is GET /api/v1/emails/{id}/auth's answer.
type apiAuth struct {
	Status string
	Client struct {
		IP, Helo string
		PTR      *string
		FCrDNS   bool
	}
	TLS      *struct{ Version, Cipher string }
	MailFrom string
	SPF      *struct{ Result, Domain string }
	DKIM     []struct{ Result, Domain, Selector, Error string }
	DMARC    *struct {
		Result, Domain          string
		Policy                  *string
		SPFAligned, DKIMAligned bool
	}
	AuthenticationResults *string
}

// auth asks burner for the verdicts of email id, waiting up to wait
// seconds (0: not at all).
func (ta *testApp) auth(t *testing.T, key, id string, wait int) apiAuth {
	t.Helper()
	path := "/api/v1/emails/" + id + "/auth"
	if wait > 0 {
		path += fmt.Sprintf("?wait=%d", wait)
	}
	status, body := ta.get(t, key, path)
	var a apiAuth
	if err := json.Unmarshal(body, &a); status != http.StatusOK || err != nil {
		t.Fatalf("GET %s = %d %s (%v)", path, status, body, err)
	}
	return a
}

// authWorld is the DNS of the end-to-end tests: a domain for each SPF
// result, DMARC records, a DKIM key, and the PTR of 127.0.0.1, which
// resolves back.
func authWorld(t *testing.T) (*dnstest.Server, ed25519.PrivateKey) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	z := dnstest.Start(t)
	z.Add(t,
		`pass.test. 300 IN TXT "v=spf1 ip4:127.0.0.0/8 -all"`,
		`_dmarc.pass.test. 300 IN TXT "v=DMARC1; p=reject"`,
		`soft.test. 300 IN TXT "v=spf1 ~all"`,
		`fail.test. 300 IN TXT "v=spf1 -all"`,
		`_dmarc.fail.test. 300 IN TXT "v=DMARC1; p=quarantine"`,
		`neutral.test. 300 IN TXT "v=spf1 ?all"`,
		`perm.test. 300 IN TXT "v=spf1 ip4:not-an-address -all"`,
		`1.0.0.127.in-addr.arpa. 300 IN PTR mx.client.test.`,
		`mx.client.test. 300 IN A 127.0.0.1`,
	)
	z.TXT("s1._domainkey.pass.test", dnstest.KeyRecord(t, key))
	z.TXT("s1._domainkey.fail.test", dnstest.KeyRecord(t, key))
	return z, key
}

// startAuthApp starts burner on data (a file or a PostgreSQL URL), with
// STARTTLS and the config lines extra.
func startAuthApp(t *testing.T, data, extra string) *testApp {
	t.Helper()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, cert, key, 1)
	cfg := writeConfig(t, fmt.Sprintf("data = %q\n%s[smtp]\nlisten = \"127.0.0.1:0\"\nhostname = \"mx.burner.test\"\ndomains = [\"inbox.test\"]\n"+
		"tls_cert = %q\ntls_key = %q\n[http]\nlisten = \"127.0.0.1:0\"\n", data, extra, cert, key))
	ta := startAppConfig(t, cfg, os.Stderr)
	if ta.key == "" {
		t.Fatalf("start printed no first key: %q", ta.notice)
	}
	return ta
}

// sendAs sends msg from helo and mailFrom to to over SMTP, after STARTTLS
// when overTLS, and fails the test unless it gets a 250.
func sendAs(t *testing.T, addr, helo string, overTLS bool, mailFrom string, to []string, msg []byte) {
	t.Helper()
	var c *smtp.Client
	var err error
	if overTLS {
		c, err = smtp.DialStartTLS(addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	} else {
		c, err = smtp.Dial(addr)
	}
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	if err := c.Hello(helo); err != nil {
		t.Fatal(err)
	}
	if err := c.SendMail(mailFrom, to, strings.NewReader(string(msg))); err != nil {
		t.Fatalf("SendMail from %q: %v", mailFrom, err)
	}
	c.Quit()
}

// authMessage returns a message from a@domain with subject.
func authMessage(domain, subject string) []byte {
	return []byte("From: Sender <a@" + domain + ">\r\nTo: inbox@inbox.test\r\nSubject: " + subject + "\r\n" +
		"Date: Mon, 02 Mar 2026 10:00:00 +0000\r\nMessage-ID: <" + subject + "@" + domain + ">\r\n\r\nHello.\r\n")
}

// TestAuthEndToEnd: a test suite asks for its mail's SPF, DKIM and DMARC
// in one call (spec §12), on both engines, over plain SMTP and STARTTLS,
// with a DNS server of its own; every result word of SPF and DMARC, and
// DKIM's pass and fail, come through the whole path.
func TestAuthEndToEnd(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { authEndToEnd(t, filepath.Join(t.TempDir(), "burner.db")) })
	t.Run("postgres", func(t *testing.T) { authEndToEnd(t, testDatabase(t)) })
}

func authEndToEnd(t *testing.T, data string) {
	z, key := authWorld(t)
	t.Setenv("BURNER_DNS_RESOLVER", z.Addr)
	ta := startAuthApp(t, data, "")
	addr := ta.smtpLn.Addr().String()
	ids := func(inbox string, n int) []string {
		t.Helper()
		got := ta.listIDs(t, ta.key, inbox)
		if len(got) != n {
			t.Fatalf("inbox %s holds %v, want %d emails", inbox, got, n)
		}
		out := make([]string, n)
		for i, s := range got {
			out[i], _, _ = strings.Cut(s, " ")
		}
		return out
	}

	// Signed, to two inboxes, over plain SMTP: everything passes, and
	// both copies answer the one verdict.
	signed := dnstest.Sign(t, authMessage("pass.test", "passing"), "pass.test", "s1", key)
	sendAs(t, addr, "client.pass.test", false, "bounce@pass.test", []string{"alice@inbox.test", "bob@inbox.test"}, signed)
	alice, bob := ids("alice", 1)[0], ids("bob", 1)[0]
	got := ta.auth(t, ta.key, alice, 30)
	if got.Status != "done" || got.Client.IP != "127.0.0.1" || got.Client.Helo != "client.pass.test" || got.Client.PTR == nil ||
		*got.Client.PTR != "mx.client.test" || !got.Client.FCrDNS || got.TLS != nil || got.MailFrom != "bounce@pass.test" {
		t.Errorf("alice's auth: %+v; want done, from 127.0.0.1 (mx.client.test, resolving back) as client.pass.test, without TLS, from bounce@pass.test", got)
	}
	if got.SPF == nil || *got.SPF != (struct{ Result, Domain string }{"pass", "pass.test"}) ||
		len(got.DKIM) != 1 || got.DKIM[0].Result != "pass" || got.DKIM[0].Domain != "pass.test" || got.DKIM[0].Selector != "s1" ||
		got.DMARC == nil || got.DMARC.Result != "pass" || got.DMARC.Policy == nil || *got.DMARC.Policy != "reject" || !got.DMARC.SPFAligned || !got.DMARC.DKIMAligned {
		t.Errorf("alice's verdicts: spf %+v, dkim %+v, dmarc %+v; want pass, pass, pass (reject, both aligned)", got.SPF, got.DKIM, got.DMARC)
	}
	if got.AuthenticationResults == nil || *got.AuthenticationResults != "mx.burner.test; spf=pass smtp.mailfrom=pass.test; "+
		"dkim=pass header.d=pass.test header.s=s1; dmarc=pass header.from=pass.test" {
		t.Errorf("alice's Authentication-Results: %v", got.AuthenticationResults)
	}
	if other := ta.auth(t, ta.key, bob, 0); !reflect.DeepEqual(other, got) {
		t.Errorf("bob's copy answers %+v, alice's %+v: want one verdict for both", other, got)
	}

	// Over STARTTLS from the null sender: SPF is the HELO name's
	// (softfail); an altered body fails DKIM; DMARC fails its policy.
	altered := dnstest.Sign(t, authMessage("fail.test", "failing"), "fail.test", "s1", key)
	altered = []byte(strings.Replace(string(altered), "Hello.", "Hello, altered.", 1))
	sendAs(t, addr, "soft.test", true, "", []string{"carol@inbox.test"}, altered)
	got = ta.auth(t, ta.key, ids("carol", 1)[0], 30)
	if got.TLS == nil || got.TLS.Version != "TLS 1.3" || !strings.HasPrefix(got.TLS.Cipher, "TLS_") || got.MailFrom != "" || got.Client.Helo != "soft.test" {
		t.Errorf("carol's auth: tls %+v, mailFrom %q, helo %q; want TLS 1.3 and its cipher, \"\" and soft.test", got.TLS, got.MailFrom, got.Client.Helo)
	}
	if got.SPF == nil || got.SPF.Result != "softfail" || got.SPF.Domain != "soft.test" || len(got.DKIM) != 1 || got.DKIM[0].Result != "fail" ||
		got.DKIM[0].Error == "" || got.DMARC == nil || got.DMARC.Result != "fail" || got.DMARC.Policy == nil || *got.DMARC.Policy != "quarantine" {
		t.Errorf("carol's verdicts: spf %+v, dkim %+v, dmarc %+v; want softfail for soft.test, fail with a reason, fail (quarantine)", got.SPF, got.DKIM, got.DMARC)
	}

	// The other SPF words, unsigned mail, and no DMARC record.
	for _, c := range []struct{ inbox, domain, spf string }{
		{"dave", "none.test", "none"},
		{"erin", "neutral.test", "neutral"},
		{"frank", "perm.test", "permerror"},
		{"grace", "fail.test", "fail"},
	} {
		sendAs(t, addr, "client.test", c.inbox == "dave", "bounce@"+c.domain, []string{c.inbox + "@inbox.test"}, authMessage(c.domain, c.inbox))
		got := ta.auth(t, ta.key, ids(c.inbox, 1)[0], 30)
		if got.Status != "done" || got.SPF == nil || got.SPF.Result != c.spf || got.SPF.Domain != c.domain || got.DKIM == nil || len(got.DKIM) != 0 {
			t.Errorf("mail from %s: %+v (spf %+v); want spf %s and no signature", c.domain, got, got.SPF, c.spf)
		}
		wantDMARC := "none"
		if c.domain == "fail.test" {
			wantDMARC = "fail"
		}
		if got.DMARC == nil || got.DMARC.Result != wantDMARC || (wantDMARC == "none") != (got.DMARC.Policy == nil) {
			t.Errorf("mail from %s: dmarc %+v, want %s", c.domain, got.DMARC, wantDMARC)
		}
	}

	// A hot backup carries the verdict, and checks sound (bbolt: the
	// control socket's backup; PostgreSQL has pg_dump).
	if !isPostgres(data) {
		backup := filepath.Join(t.TempDir(), "backup.db")
		if out, err := runCmd(t, "backup", backup, "--config", ta.config); err != nil {
			t.Fatalf("burner backup = %q, %v", out, err)
		}
		if out, err := runCmd(t, "check", "--data", backup); err != nil || !strings.Contains(out, "OK: the file is consistent") {
			t.Errorf("burner check of the backup = %q, %v", out, err)
		}
		b, err := boltdb.Open(backup, boltdb.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Auth(context.Background(), bob)
		b.Close()
		if err != nil || r.Status != storage.AuthDone || r.SPF.Result != storage.AuthPass || len(r.DKIM) != 1 {
			t.Errorf("bob's record in the backup: %+v, %v; want the verdict", r, err)
		}
	}

	// The record stays with the copy left and goes with the last one.
	for i, id := range []string{alice, bob} {
		if status, _ := ta.do(t, http.MethodDelete, ta.key, "/api/v1/emails/"+id); status != http.StatusNoContent {
			t.Fatalf("DELETE = %d", status)
		}
		if status, _ := ta.get(t, ta.key, "/api/v1/emails/"+alice+"/auth"); status != http.StatusNotFound {
			t.Errorf("GET auth of a deleted email = %d, want 404", status)
		}
		if i == 0 {
			if a := ta.auth(t, ta.key, bob, 0); a.Status != "done" || a.SPF == nil || a.SPF.Result != "pass" {
				t.Errorf("bob's auth after alice's copy went: %+v", a)
			}
		}
	}
	if r, err := ta.db.Check(context.Background()); err != nil || !r.OK() {
		t.Errorf("Check after the deletions: %+v, %v", r, err)
	}

	// What the info and the metrics say.
	if status, body := ta.get(t, ta.key, "/api/v1/info"); status != 200 || !strings.Contains(string(body), `"auth":true`) {
		t.Errorf("GET /api/v1/info = %d %s, want features.auth true", status, body)
	}
	status, body := ta.get(t, ta.key, "/metrics")
	for _, s := range []string{`burner_auth_results_total{method="spf",result="softfail"} 1`, `burner_auth_results_total{method="dkim",result="fail"} 1`,
		`burner_auth_jobs_total{outcome="verified"} 6`, `burner_auth_verify_seconds_count 6`} {
		if status != 200 || !strings.Contains(string(body), s+"\n") {
			t.Errorf("GET /metrics lacks %q", s)
		}
	}
}

// TestAuthNoDNSAnswer: with a DNS server that never answers, the 250
// does not wait: the record is pending right after it, and the verdict
// comes within dns.timeout, every check temperror.
func TestAuthNoDNSAnswer(t *testing.T) {
	hole, _ := dnstest.Blackhole(t)
	t.Setenv("BURNER_DNS_RESOLVER", hole)
	ta := startAuthApp(t, filepath.Join(t.TempDir(), "burner.db"), "[dns]\ntimeout = \"3s\"\n")
	sendAs(t, ta.smtpLn.Addr().String(), "client.test", false, "bounce@pass.test", []string{"alice@inbox.test"}, authMessage("pass.test", "unanswered"))
	id, _, _ := strings.Cut(ta.listIDs(t, ta.key, "alice")[0], " ")
	if a := ta.auth(t, ta.key, id, 0); a.Status != "pending" || a.SPF != nil || a.Client.IP != "127.0.0.1" {
		t.Errorf("auth right after the 250: %+v; want pending, with the client recorded", a)
	}
	a := ta.auth(t, ta.key, id, 30)
	if a.Status != "done" || a.SPF == nil || a.SPF.Result != "temperror" || a.DMARC == nil || a.DMARC.Result != "temperror" || a.Client.PTR != nil {
		t.Errorf("auth once DNS timed out: %+v (spf %+v, dmarc %+v); want temperror, no PTR", a, a.SPF, a.DMARC)
	}
}

// TestAuthOff: with auth.verify = false the envelope is kept and the
// status is off; GET /api/v1/info says so.
func TestAuthOff(t *testing.T) {
	ta := startAuthApp(t, filepath.Join(t.TempDir(), "burner.db"), "[auth]\nverify = false\n")
	sendAs(t, ta.smtpLn.Addr().String(), "client.test", true, "bounce@pass.test", []string{"alice@inbox.test"}, authMessage("pass.test", "off"))
	id, _, _ := strings.Cut(ta.listIDs(t, ta.key, "alice")[0], " ")
	a := ta.auth(t, ta.key, id, 5)
	if a.Status != "off" || a.SPF != nil || a.DMARC != nil || a.DKIM == nil || a.Client.Helo != "client.test" || a.TLS == nil || a.MailFrom != "bounce@pass.test" {
		t.Errorf("auth with verify = false: %+v; want off, no verdicts, the envelope kept", a)
	}
	if status, body := ta.get(t, ta.key, "/api/v1/info"); status != 200 || !strings.Contains(string(body), `"auth":false`) {
		t.Errorf("GET /api/v1/info = %d %s, want features.auth false", status, body)
	}
	if _, body := ta.get(t, ta.key, "/metrics"); strings.Contains(string(body), "burner_auth_") {
		t.Errorf("/metrics has the verifier's series with verify = false")
	}
}

// TestAuthKillNine: burner is killed with SIGKILL between a message's 250
// and its verdict (its DNS never answers); started again, it finds the
// record pending past the verifier's MaxDelay, computes the verdict from
// the stored message when it is asked, and stores it.
func TestAuthKillNine(t *testing.T) {
	if os.Getenv("BURNER_CHILD_DATA") != "" {
		t.Skip("child process")
	}
	data := filepath.Join(t.TempDir(), "burner.db")
	db, err := boltdb.Open(data, boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, apiKey, err := db.CreateKey(context.Background(), "test", storage.Scope{})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	z, key := authWorld(t)
	hole, _ := dnstest.Blackhole(t)
	t.Setenv("BURNER_DNS_RESOLVER", hole)
	t.Setenv("BURNER_DNS_TIMEOUT", "60s")
	srv := startChild(t, data)
	sendAs(t, srv.smtpAddr, "client.pass.test", false, "bounce@pass.test", []string{"alice@inbox.test"},
		dnstest.Sign(t, authMessage("pass.test", "killed"), "pass.test", "s1", key))
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.cmd.Wait()

	db, err = boltdb.Open(data, boltdb.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	es, err := db.List(context.Background(), storage.Query{LocalPart: "alice"})
	var pending storage.AuthResult
	if err == nil && len(es) == 1 {
		pending, err = db.Auth(context.Background(), es[0].ID)
	}
	db.Close()
	if err != nil || len(es) != 1 || pending.Status != storage.AuthPending {
		t.Fatalf("after the kill: %d emails, record %+v, %v; want the email, its record pending", len(es), pending, err)
	}

	// Again, with a DNS that answers, and a timeout that makes MaxDelay
	// short: the wait reaches it, and the read computes the verdict.
	t.Setenv("BURNER_DNS_RESOLVER", z.Addr)
	t.Setenv("BURNER_DNS_TIMEOUT", "200ms")
	again := startChild(t, data)
	ta := &testApp{app: &app{httpLn: fakeAddrListener(strings.TrimPrefix(again.http, "http://"))}}
	a := ta.auth(t, apiKey, es[0].ID, 30)
	if a.Status != "done" || a.SPF == nil || a.SPF.Result != "pass" || len(a.DKIM) != 1 || a.DKIM[0].Result != "pass" || a.DMARC == nil || a.DMARC.Result != "pass" {
		t.Errorf("auth after kill -9 and a restart: %+v; want the verdict computed: pass", a)
	}
	if b := ta.auth(t, apiKey, es[0].ID, 0); !reflect.DeepEqual(a, b) {
		t.Errorf("auth read again: %+v, want the stored verdict %+v", b, a)
	}
}

// fakeAddrListener is a net.Listener that only names addr, for a testApp
// that reaches a server of another process.
type fakeAddrListener string

func (l fakeAddrListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (l fakeAddrListener) Close() error              { return nil }
func (l fakeAddrListener) Addr() net.Addr {
	a, _ := net.ResolveTCPAddr("tcp", string(l))
	return a
}
