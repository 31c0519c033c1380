package mailauth

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"burner/internal/dnstest"
	"burner/storage"
)

// The corpus of testdata/SOURCES.md: messages signed by other DKIM
// signers (GitHub's, Google's for janestreet.com, Discourse's, Exim's, the
// examples of RFC 8463), verified against the key records published then.
// Each verdict is the one Google's MX recorded in the message's
// Authentication-Results, but for 001.mail's: rsa-sha1, which RFC 8301
// has since forbidden.
func TestDKIMRealWorld(t *testing.T) {
	z := dnstest.Start(t)
	files, err := filepath.Glob("testdata/blaze/cache/*.dns")
	if err != nil || len(files) == 0 {
		t.Fatalf("no key records in testdata/blaze/cache: %v", err)
	}
	for _, f := range files {
		// One line, "txt:" then the record: blaze's cache of the name.
		b := readFile(t, f)
		name := strings.TrimSuffix(filepath.Base(f), ".dns")
		z.TXT(name, strings.TrimPrefix(strings.TrimSpace(string(b)), "txt:"))
	}
	z.TXT("sed._domainkey.test.ex", strings.TrimSpace(string(readFile(t, "testdata/dkimpy/eximtest.dns"))))
	z.TXT("test._domainkey.football.example.com", strings.TrimSpace(string(readFile(t, "testdata/dkimpy/test.txt"))))
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)

	pass := func(domain, selector string) storage.DKIMResult {
		return storage.DKIMResult{Result: storage.AuthPass, Domain: domain, Selector: selector}
	}
	for _, c := range []struct {
		file string
		want []storage.DKIMResult
	}{
		{"blaze/001.mail", []storage.DKIMResult{
			{Result: storage.AuthPermError, Domain: "github.com", Selector: "s20150108", Error: "hash algorithm too weak: sha1"},
			{Result: storage.AuthPermError, Domain: "sendgrid.info", Selector: "smtpapi", Error: "hash algorithm too weak: sha1"},
		}},
		{"blaze/002.mail", []storage.DKIMResult{pass("github.com", "pf2014")}},
		{"blaze/003.mail", []storage.DKIMResult{pass("janestreet.com", "google")}},
		{"blaze/004.mail", []storage.DKIMResult{pass("discoursemail.com", "sjc2")}},
		{"blaze/007.mail", []storage.DKIMResult{pass("football.example.com", "brisbane")}},
		{"dkimpy/ed25519test2.msg", []storage.DKIMResult{pass("test.ex", "sed")}},
		{"dkimpy/rfc6376.signed.msg", []storage.DKIMResult{pass("football.example.com", "brisbane"), pass("football.example.com", "test")}},
	} {
		t.Run(c.file, func(t *testing.T) {
			raw := crlf(readFile(t, filepath.Join("testdata", c.file)))
			got := v.checkDKIM(context.Background(), raw, readHeader(raw))
			if !sameDKIM(got, c.want) {
				t.Errorf("checkDKIM =\n%+v\nwant\n%+v", got, c.want)
			}
			// Each byte counts: one more line in the body, and it fails.
			raw = append(raw, "--\r\nadded in transit\r\n"...)
			got = v.checkDKIM(context.Background(), raw, readHeader(raw))
			for i, d := range got {
				if c.want[i].Result == storage.AuthPass && (d.Result != storage.AuthFail || d.Error != "body hash did not verify") {
					t.Errorf("signature %d of the altered message: %+v, want fail, body hash did not verify", i+1, d)
				}
			}
		})
	}
}

// TestRealWorldVerify: GitHub's notification as its MX saw it (client
// address and MAIL FROM from its Received-SPF field), SPF and DMARC from
// the records published then.
func TestRealWorldVerify(t *testing.T) {
	z := dnstest.Start(t)
	for _, name := range []string{"github.com", "_dmarc.github.com", "pf2014._domainkey.github.com"} {
		b := readFile(t, filepath.Join("testdata/blaze/cache", name+".dns"))
		z.TXT(name, strings.TrimPrefix(strings.TrimSpace(string(b)), "txt:"))
	}
	v := newTestVerifier(t, Options{Resolver: z.Addr, Hostname: "mx.burner.test"}, nil)
	raw := crlf(readFile(t, "testdata/blaze/002.mail"))
	got := v.Verify(context.Background(), envelope("192.30.252.192", "out-1.smtp.github.com", "noreply@github.com"), raw)
	want := "mx.burner.test; spf=pass smtp.mailfrom=github.com; dkim=pass header.d=github.com header.s=pf2014; dmarc=pass header.from=github.com"
	if got.SPF.Result != storage.AuthPass || got.DMARC != (storage.DMARCResult{Result: storage.AuthPass, Domain: "github.com", Policy: "reject", SPFAligned: true, DKIMAligned: true}) ||
		got.AuthenticationResults != want {
		t.Errorf("Verify(GitHub's notification) = %+v\nwant SPF pass, DMARC pass under p=reject, %q", got, want)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// crlf returns raw with CRLF line ends, as SMTP carries it.
func crlf(raw []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}
