package mailauth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"strings"
	"sync"
	"testing"

	"burner/internal/dnstest"
	"burner/storage"
)

// testKeys are made once per test binary: RSA keys take a while.
var testKeys = sync.OnceValue(func() (k struct {
	rsa, otherRSA *rsa.PrivateKey
	ed            ed25519.PrivateKey
}) {
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.otherRSA, err = rsa.GenerateKey(rand.Reader, 1024); err != nil {
		panic(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		panic(err)
	}
	return k
})

// testMessage returns a message from the address from, with CRLF lines.
func testMessage(from, body string) []byte {
	return []byte("From: Sender <" + from + ">\r\nTo: inbox@burner.test\r\nSubject: Hello\r\n" +
		"Date: Mon, 02 Mar 2026 10:00:00 +0000\r\nMessage-ID: <1@burner.test>\r\n\r\n" + body)
}

func TestDKIM(t *testing.T) {
	k := testKeys()
	z := dnstest.Start(t)
	z.TXT("rsa._domainkey.example.test", dnstest.KeyRecord(t, k.rsa))
	z.TXT("ed._domainkey.example.test", dnstest.KeyRecord(t, k.ed))
	z.TXT("rotated._domainkey.example.test", dnstest.KeyRecord(t, k.otherRSA))
	z.TXT("revoked._domainkey.example.test", "v=DKIM1; k=rsa; p=")
	z.TXT("garbled._domainkey.example.test", "v=DKIM1; k=rsa; p=bm90IGEga2V5")
	z.TXT("kind._domainkey.example.test", dnstest.KeyRecord(t, k.ed))
	z.Fail("down._domainkey.example.test")
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)
	plain := testMessage("a@example.test", "Hello.\r\n")

	withL := func(raw []byte) []byte { // a signature claiming l=: the body may go on unsigned
		return bytes.Replace(raw, []byte("DKIM-Signature: "), []byte("DKIM-Signature: l=8; "), 1)
	}
	headerOnly := dnstest.Sign(t, []byte("From: a@example.test\r\nSubject: no body\r\n\r\n"), "example.test", "rsa", k.rsa)
	headerOnly = headerOnly[:len(headerOnly)-2] // no blank line at all: a message of header fields alone

	for _, c := range []struct {
		name string
		raw  []byte
		want []storage.DKIMResult
	}{
		{"unsigned", plain, nil},
		{"pass, RSA", dnstest.Sign(t, plain, "example.test", "rsa", k.rsa),
			[]storage.DKIMResult{{Result: storage.AuthPass, Domain: "example.test", Selector: "rsa"}}},
		{"pass, Ed25519", dnstest.Sign(t, plain, "example.test", "ed", k.ed),
			[]storage.DKIMResult{{Result: storage.AuthPass, Domain: "example.test", Selector: "ed"}}},
		{"pass, LF line ends", bytes.ReplaceAll(dnstest.Sign(t, plain, "example.test", "rsa", k.rsa), []byte("\r\n"), []byte("\n")),
			[]storage.DKIMResult{{Result: storage.AuthPass, Domain: "example.test", Selector: "rsa"}}},
		{"pass, header fields alone", headerOnly,
			[]storage.DKIMResult{{Result: storage.AuthPass, Domain: "example.test", Selector: "rsa"}}},
		{"fail, altered body", append(dnstest.Sign(t, plain, "example.test", "rsa", k.rsa), "P.S. added in transit\r\n"...),
			[]storage.DKIMResult{{Result: storage.AuthFail, Domain: "example.test", Selector: "rsa", Error: "body hash did not verify"}}},
		{"fail, altered header", bytes.Replace(dnstest.Sign(t, plain, "example.test", "rsa", k.rsa), []byte("Subject: Hello"), []byte("Subject: Hullo"), 1),
			[]storage.DKIMResult{{Result: storage.AuthFail, Domain: "example.test", Selector: "rsa", Error: "signature did not verify: crypto/rsa: verification error"}}},
		{"fail, wrong key", dnstest.Sign(t, plain, "example.test", "rotated", k.rsa),
			[]storage.DKIMResult{{Result: storage.AuthFail, Domain: "example.test", Selector: "rotated", Error: "signature did not verify: crypto/rsa: verification error"}}},
		{"permerror, no key", dnstest.Sign(t, plain, "example.test", "nokey", k.rsa),
			[]storage.DKIMResult{{Result: storage.AuthPermError, Domain: "example.test", Selector: "nokey", Error: "no key for signature: lookup nokey._domainkey.example.test: no such host"}}},
		{"permerror, revoked key", dnstest.Sign(t, plain, "example.test", "revoked", k.rsa),
			[]storage.DKIMResult{{Result: storage.AuthPermError, Domain: "example.test", Selector: "revoked", Error: "key revoked"}}},
		{"permerror, garbled key", dnstest.Sign(t, plain, "example.test", "garbled", k.rsa),
			[]storage.DKIMResult{{Result: storage.AuthPermError, Domain: "example.test", Selector: "garbled", Error: "key syntax error: "}}},
		{"permerror, key of another kind", dnstest.Sign(t, plain, "example.test", "kind", k.rsa),
			[]storage.DKIMResult{{Result: storage.AuthPermError, Domain: "example.test", Selector: "kind", Error: "inappropriate key algorithm"}}},
		{"permerror, malformed signature", append([]byte("DKIM-Signature: v=1; d=example.test; s=rsa\r\n"), plain...),
			[]storage.DKIMResult{{Result: storage.AuthPermError, Domain: "example.test", Selector: "rsa", Error: "signature missing required tag"}}},
		{"temperror, key lookup SERVFAIL", dnstest.Sign(t, plain, "example.test", "down", k.rsa),
			[]storage.DKIMResult{{Result: storage.AuthTempError, Domain: "example.test", Selector: "down", Error: "key unavailable: lookup down._domainkey.example.test: server answered SERVFAIL"}}},
		{"neutral, l=", withL(dnstest.Sign(t, plain, "example.test", "rsa", k.rsa)),
			[]storage.DKIMResult{{Result: storage.AuthNeutral, Domain: "example.test", Selector: "rsa", Error: "l= (body length) not accepted: part of the body would be unsigned"}}},
		{"two, in header order", dnstest.Sign(t, dnstest.Sign(t, plain, "example.test", "rsa", k.rsa), "example.test", "ed", k.ed),
			[]storage.DKIMResult{
				{Result: storage.AuthPass, Domain: "example.test", Selector: "ed"},
				{Result: storage.AuthPass, Domain: "example.test", Selector: "rsa"},
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := v.checkDKIM(context.Background(), c.raw, readHeader(c.raw))
			if !sameDKIM(got, c.want) {
				t.Errorf("checkDKIM =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

// sameDKIM reports whether got is want, each error starting with the
// one wanted (some end in a library's words).
func sameDKIM(got, want []storage.DKIMResult) bool {
	if len(got) != len(want) {
		return false
	}
	for i, g := range got {
		w := want[i]
		if g.Result != w.Result || g.Domain != w.Domain || g.Selector != w.Selector ||
			!strings.HasPrefix(g.Error, w.Error) || (g.Error == "") != (w.Error == "") {
			return false
		}
	}
	return true
}

// TestDKIMTooManySignatures: five are verified, the rest are permerror.
func TestDKIMTooManySignatures(t *testing.T) {
	k := testKeys()
	z := dnstest.Start(t)
	z.TXT("ed._domainkey.example.test", dnstest.KeyRecord(t, k.ed))
	v := newTestVerifier(t, Options{Resolver: z.Addr}, nil)
	raw := testMessage("a@example.test", "Hello.\r\n")
	for range 7 {
		raw = dnstest.Sign(t, raw, "example.test", "ed", k.ed)
	}
	got := v.checkDKIM(context.Background(), raw, readHeader(raw))
	if len(got) != 7 {
		t.Fatalf("checkDKIM of 7 signatures returned %d verdicts", len(got))
	}
	for i, d := range got {
		want := storage.DKIMResult{Result: storage.AuthPass, Domain: "example.test", Selector: "ed"}
		if i >= 5 {
			want.Result, want.Error = storage.AuthPermError, "too many signatures"
		}
		if d != want {
			t.Errorf("signature %d: %+v, want %+v", i+1, d, want)
		}
	}
}

func TestReadHeader(t *testing.T) {
	raw := []byte(" DKIM-Signature: first line folded? no: a field of its own\r\n" +
		"dkim-signature: v=1; d=Example.TEST;\r\n\ts = sel ; b=abc\r\n" +
		"From: a@example.test\r\n" +
		"No colon here\r\n" +
		"DKIM-Signature : d=other.test; s=s2\n" +
		"\r\n" +
		"From: in the body\r\n")
	h := readHeader(raw)
	want := []signature{{}, {"example.test", "sel"}, {"other.test", "s2"}}
	if fmt.Sprint(h.sigs) != fmt.Sprint(want) || !h.ended || len(h.from) != 1 || h.from[0] != "a@example.test" {
		t.Errorf("readHeader = %+v, want signatures %v, From a@example.test, ended", h, want)
	}
	if h := readHeader([]byte("From: a@example.test")); h.ended || len(h.from) != 1 {
		t.Errorf("readHeader of one field without a line end = %+v", h)
	}
	if h := readHeader(nil); h.ended || h.from != nil || h.sigs != nil {
		t.Errorf("readHeader(nil) = %+v, want nothing", h)
	}
}
