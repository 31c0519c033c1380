package smtpd

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"burner/internal/dnstest"
	"burner/mailauth"
	"burner/storage"
)

// jobs is a Verifier that keeps what it is given, for the test to read:
// the part of the verifier smtpd speaks to.
type jobs chan job

type job struct {
	ids []string
	env storage.Envelope
	raw []byte
}

func (j jobs) Queue(ids []string, env storage.Envelope, raw []byte) { j <- job{ids, env, raw} }

func (j jobs) next(t *testing.T) job {
	t.Helper()
	select {
	case got := <-j:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("no message submitted for verification")
		return job{}
	}
}

// TestAuthEnvelope: each stored message carries what the MX saw (spec
// §12): the client's address, its EHLO name, MAIL FROM ("" for <>) and,
// after STARTTLS, the TLS version and cipher; pending, and handed to the
// verifier after the commit with the ids of its copies and a copy of the
// bytes stored, which the next message does not overwrite.
func TestAuthEnvelope(t *testing.T) {
	db := openDB(t)
	verify := make(jobs, 4)
	addr := startDaemon(t, db, Options{Hostname: "mx.burner.test", TLSConfig: selfSigned(t), Auth: verify})
	ctx := context.Background()

	c := dial(t, addr)
	if err := c.Hello("client.sender.test"); err != nil {
		t.Fatal(err)
	}
	if err := c.SendMail("bounce@sender.test", []string{"alice@inbox.test", "bob@inbox.test"}, strings.NewReader(simple)); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	first := verify.next(t)
	want := storage.Envelope{ClientIP: netip.MustParseAddr("127.0.0.1"), Helo: "client.sender.test", MailFrom: "bounce@sender.test"}
	if !reflect.DeepEqual(first.env, want) {
		t.Errorf("submitted envelope = %+v, want %+v", first.env, want)
	}
	alice, bob := list(t, db, "alice"), list(t, db, "bob")
	if len(alice) != 1 || len(bob) != 1 || !reflect.DeepEqual(first.ids, []string{alice[0].ID, bob[0].ID}) {
		t.Errorf("submitted ids %q, want alice's and bob's copies", first.ids)
	}
	for _, e := range append(alice, bob...) {
		if r, err := db.Auth(ctx, e.ID); err != nil || !reflect.DeepEqual(r, storage.AuthResult{Status: storage.AuthPending, Envelope: want}) {
			t.Errorf("Auth(%s) = %+v, %v; want pending with the envelope", e.To, r, err)
		}
	}
	stored, err := db.Raw(ctx, alice[0].ID)
	if err != nil || string(first.raw) != string(stored) {
		t.Fatalf("submitted raw %q, want the stored %q (%v)", first.raw, stored, err)
	}
	kept := string(first.raw)

	// The null sender, over STARTTLS, on the same connection's buffer.
	tc, err := smtp.DialStartTLS(addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatalf("DialStartTLS: %v", err)
	}
	defer tc.Close()
	// The EHLO before STARTTLS was "localhost": the one after it counts.
	if err := tc.Hello("tls.sender.test"); err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(simple, "Hi there", "Another message, longer than the first one", 1)
	if err := tc.SendMail("", []string{"carol@inbox.test"}, strings.NewReader(other)); err != nil {
		t.Fatalf("SendMail over TLS: %v", err)
	}
	second := verify.next(t)
	if e := second.env; e.MailFrom != "" || e.Helo != "tls.sender.test" || e.TLS == nil || e.TLS.Version != "TLS 1.3" || !strings.HasPrefix(e.TLS.Cipher, "TLS_") {
		t.Errorf("envelope over STARTTLS from <> = %+v (tls %+v); want MAIL FROM \"\", the EHLO after STARTTLS, TLS 1.3 and its cipher", e, e.TLS)
	}
	carol := list(t, db, "carol")
	if r, err := db.Auth(ctx, carol[0].ID); err != nil || !reflect.DeepEqual(r.Envelope, second.env) || r.Status != storage.AuthPending {
		t.Errorf("Auth(carol) = %+v, %v; want pending with %+v", r, err, second.env)
	}
	if string(first.raw) != kept {
		t.Errorf("the first job's bytes changed when the next message came: %q", first.raw)
	}
}

// TestAuthOff: without a verifier the envelope is stored all the same,
// with status off.
func TestAuthOff(t *testing.T) {
	db := openDB(t)
	c := dial(t, startDaemon(t, db, Options{}))
	if err := c.SendMail("a@sender.test", []string{"off@inbox.test"}, strings.NewReader(simple)); err != nil {
		t.Fatal(err)
	}
	e := list(t, db, "off")[0]
	r, err := db.Auth(context.Background(), e.ID)
	want := storage.AuthResult{Status: storage.AuthOff, Envelope: storage.Envelope{ClientIP: netip.MustParseAddr("127.0.0.1"), Helo: "localhost", MailFrom: "a@sender.test"}}
	if err != nil || !reflect.DeepEqual(r, want) {
		t.Errorf("Auth = %+v, %v; want %+v", r, err, want)
	}
}

// BenchmarkAuthJobBytes measures the two ways to give the verifier bytes
// of its own: copy the DATA buffer and return it to the pool (what Data
// does), or hand the buffer over and grow a new one for the next message,
// as a 4 KB message read line by line grows it.
func BenchmarkAuthJobBytes(b *testing.B) {
	line := []byte(strings.Repeat("x", 76) + "\r\n")
	read := func(buf *bytes.Buffer) {
		for range 4096 / len(line) {
			buf.Write(line)
		}
	}
	var sink []byte
	b.Run("copy", func(b *testing.B) {
		var pool sync.Pool
		b.ReportAllocs()
		for b.Loop() {
			buf, _ := pool.Get().(*bytes.Buffer)
			if buf == nil {
				buf = new(bytes.Buffer)
			}
			read(buf)
			sink = bytes.Clone(buf.Bytes())
			buf.Reset()
			pool.Put(buf)
		}
	})
	b.Run("handover", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf := new(bytes.Buffer)
			read(buf)
			sink = buf.Bytes()
		}
	})
	_ = sink
}

// benchVerifier returns mailauth's pool, asking a DNS server of the
// test's own that has the SPF and DMARC records of the load generator's
// sender and the PTR of 127.0.0.1 (the newsletters' own domains have
// none), whose verdicts db stores; it is shut down, its queue drained,
// when b ends.
func benchVerifier(b *testing.B, db storage.Engine) Verifier {
	b.Helper()
	z := dnstest.Start(b)
	z.Add(b, `sender.test. 300 IN TXT "v=spf1 ip4:127.0.0.0/8 -all"`, `_dmarc.sender.test. 300 IN TXT "v=DMARC1; p=none"`,
		`1.0.0.127.in-addr.arpa. 300 IN PTR loadgen.test.`, `loadgen.test. 300 IN A 127.0.0.1`)
	v := mailauth.New(mailauth.Options{Resolver: z.Addr}, func(ctx context.Context, j mailauth.Job, r storage.AuthResult) {
		if err := db.PutAuth(ctx, j.IDs, r); err != nil {
			b.Errorf("PutAuth: %v", err)
		}
	}, slog.New(slog.DiscardHandler))
	b.Cleanup(func() { v.Shutdown(context.Background()) })
	return v
}
