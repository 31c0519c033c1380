package server

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/netip"
	"strings"
	"testing"
	"time"

	"burner/internal/dnstest"
	"burner/mailauth"
	"burner/storage"
)

// specAuth is spec §12's example as a stored record.
var specAuth = storage.AuthResult{
	Status: storage.AuthDone,
	Envelope: storage.Envelope{
		ClientIP: netip.MustParseAddr("203.0.113.7"), Helo: "mail.example.com", MailFrom: "bounce@example.com",
		TLS: &storage.TLS{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256"},
	},
	PTR: "mail.example.com", FCrDNS: true,
	SPF:   storage.SPFResult{Result: storage.AuthPass, Domain: "example.com"},
	DKIM:  []storage.DKIMResult{{Result: storage.AuthPass, Domain: "example.com", Selector: "s1"}},
	DMARC: storage.DMARCResult{Result: storage.AuthPass, Domain: "example.com", Policy: "reject", SPFAligned: true, DKIMAligned: true},
	AuthenticationResults: "mx.example.test; spf=pass smtp.mailfrom=example.com; dkim=pass header.d=example.com header.s=s1; " +
		"dmarc=pass header.from=example.com",
}

// deliverAuth stores a message for to with r as its authentication record.
func (a *apiTest) deliverAuth(to string, r storage.AuthResult) storage.Email {
	a.t.Helper()
	return a.deliver(to, storage.Message{From: "a@example.com", Raw: []byte("From: a@example.com\r\n\r\nhi\r\n"), Auth: &r})
}

// TestAuthJSON: the route answers spec §12's JSON to the letter: the
// example, then each null (no PTR, no TLS, no DMARC record), an unsigned
// message's [], an error of a signature, a pending record, a message
// stored without a record (off), and the API's 404 and 400s.
func TestAuthJSON(t *testing.T) {
	a := newAPI(t)
	e := a.deliverAuth("alice@x.test", specAuth)
	wantJSON(t, "the spec's example", a.call("GET", "/api/v1/emails/"+e.ID+"/auth"), 200,
		`{"status":"done","client":{"ip":"203.0.113.7","helo":"mail.example.com","ptr":"mail.example.com","fcrdns":true},`+
			`"tls":{"version":"TLS 1.3","cipher":"TLS_AES_128_GCM_SHA256"},"mailFrom":"bounce@example.com",`+
			`"spf":{"result":"pass","domain":"example.com"},"dkim":[{"result":"pass","domain":"example.com","selector":"s1"}],`+
			`"dmarc":{"result":"pass","domain":"example.com","policy":"reject","spfAligned":true,"dkimAligned":true},`+
			`"authenticationResults":"mx.example.test; spf=pass smtp.mailfrom=example.com; dkim=pass header.d=example.com header.s=s1; dmarc=pass header.from=example.com"}`)

	bare := storage.AuthResult{
		Status:                storage.AuthDone,
		Envelope:              storage.Envelope{ClientIP: netip.MustParseAddr("2001:db8::1"), Helo: "[2001:db8::1]"},
		SPF:                   storage.SPFResult{Result: storage.AuthNone, Domain: ""},
		DMARC:                 storage.DMARCResult{Result: storage.AuthNone, Domain: "example.com"},
		AuthenticationResults: "mx.example.test; spf=none smtp.helo=[2001:db8::1]; dkim=none; dmarc=none header.from=example.com",
	}
	e = a.deliverAuth("alice@x.test", bare)
	wantJSON(t, "nulls and an unsigned message", a.call("GET", "/api/v1/emails/"+e.ID+"/auth"), 200,
		`{"status":"done","client":{"ip":"2001:db8::1","helo":"[2001:db8::1]","ptr":null,"fcrdns":false},"tls":null,"mailFrom":"",`+
			`"spf":{"result":"none","domain":""},"dkim":[],`+
			`"dmarc":{"result":"none","domain":"example.com","policy":null,"spfAligned":false,"dkimAligned":false},`+
			`"authenticationResults":"mx.example.test; spf=none smtp.helo=[2001:db8::1]; dkim=none; dmarc=none header.from=example.com"}`)

	failed := bare
	failed.DKIM = []storage.DKIMResult{{Result: storage.AuthFail, Domain: "example.com", Selector: "s1", Error: "body hash did not verify"}}
	e = a.deliverAuth("alice@x.test", failed)
	if res := a.call("GET", "/api/v1/emails/"+e.ID+"/auth"); !contains(res.body, `"dkim":[{"result":"fail","domain":"example.com","selector":"s1","error":"body hash did not verify"}]`) {
		t.Errorf("a failed signature: %s, want its error", res.body)
	}

	pending := storage.AuthResult{Status: storage.AuthPending, Envelope: specAuth.Envelope}
	e = a.deliverAuth("alice@x.test", pending)
	wantJSON(t, "pending", a.call("GET", "/api/v1/emails/"+e.ID+"/auth"), 200,
		`{"status":"pending","client":{"ip":"203.0.113.7","helo":"mail.example.com","ptr":null,"fcrdns":false},`+
			`"tls":{"version":"TLS 1.3","cipher":"TLS_AES_128_GCM_SHA256"},"mailFrom":"bounce@example.com",`+
			`"spf":null,"dkim":[],"dmarc":null,"authenticationResults":null}`)
	// Without a verifier a pending record stays so, even long after.
	a.clock.Advance(time.Hour)
	if res := a.call("GET", "/api/v1/emails/"+e.ID+"/auth?wait=1"); !contains(res.body, `"status":"pending"`) {
		t.Errorf("pending after an hour without a verifier: %s", res.body)
	}

	off := a.deliver("alice@x.test", storage.Message{From: "a@example.com", Raw: []byte("\r\n")})
	wantJSON(t, "a message stored without a record", a.call("GET", "/api/v1/emails/"+off.ID+"/auth?wait=60"), 200,
		`{"status":"off","client":{"ip":"","helo":"","ptr":null,"fcrdns":false},"tls":null,"mailFrom":"","spf":null,"dkim":[],"dmarc":null,"authenticationResults":null}`)

	wantJSON(t, "an unknown email", a.call("GET", "/api/v1/emails/0190d3c0-0000-7000-8000-000000000000/auth"), 404, `{"error":"Email not found"}`)
	wantJSON(t, "not an id", a.call("GET", "/api/v1/emails/nope/auth"), 404, `{"error":"Email not found"}`)
	for _, w := range []string{"0", "61", "x", "1.5", "-1"} {
		wantJSON(t, "wait="+w, a.call("GET", "/api/v1/emails/"+off.ID+"/auth?wait="+w), 400, `{"error":"'wait' must be an integer from 1 to 60."}`)
	}
	wantJSON(t, "POST", a.call("POST", "/api/v1/emails/"+off.ID+"/auth"), 405, notAllowedBody)
	if res := a.call("HEAD", "/api/v1/emails/"+e.ID+"/auth?wait=60"); res.status != 200 || res.body != "" {
		t.Errorf("HEAD with wait = %d %q, want 200 at once, no body", res.status, res.body)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestAuthWait: wait holds a pending answer until the verdict lands, and
// the verdict a real verifier stores (through its Done) wakes it.
func TestAuthWait(t *testing.T) {
	a := newAPI(t)
	z := dnstest.Start(t)
	z.Add(t, `example.com. 300 IN TXT "v=spf1 ip4:192.0.2.0/24 -all"`, `_dmarc.example.com. 300 IN TXT "v=DMARC1; p=none"`)
	v := mailauth.New(mailauth.Options{Resolver: z.Addr, Hostname: "mx.burner.test"}, func(ctx context.Context, j mailauth.Job, r storage.AuthResult) {
		if err := a.db.PutAuth(ctx, j.IDs, r); err != nil {
			t.Errorf("PutAuth: %v", err)
		}
	}, testLogger(t))
	t.Cleanup(func() { v.Shutdown(context.Background()) })

	env := storage.Envelope{ClientIP: netip.MustParseAddr("192.0.2.9"), Helo: "mail.example.com", MailFrom: "bounce@example.com"}
	e := a.deliverAuth("alice@x.test", storage.AuthResult{Status: storage.AuthPending, Envelope: env})
	got := make(chan response, 1)
	go func() { got <- a.call("GET", "/api/v1/emails/"+e.ID+"/auth?wait=30") }()
	if err := v.Submit(mailauth.Job{IDs: []string{e.ID}, Envelope: env, Raw: []byte("From: a@example.com\r\n\r\nhi\r\n")}); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	var res response
	select {
	case res = <-got:
	case <-time.After(60 * time.Second):
		t.Fatal("GET ?wait=30 did not answer")
	}
	wantJSON(t, "GET ?wait=30 as the verdict lands", res, 200,
		`{"status":"done","client":{"ip":"192.0.2.9","helo":"mail.example.com","ptr":null,"fcrdns":false},"tls":null,`+
			`"mailFrom":"bounce@example.com","spf":{"result":"pass","domain":"example.com"},"dkim":[],`+
			`"dmarc":{"result":"pass","domain":"example.com","policy":"none","spfAligned":true,"dkimAligned":false},`+
			`"authenticationResults":"mx.burner.test; spf=pass smtp.mailfrom=example.com; dkim=none; dmarc=pass header.from=example.com"}`)
}

// TestAuthLostVerdict: a record still pending past its message's
// receivedAt plus the verifier's MaxDelay and the margin lost its verdict
// (the process died between the 250 and it): a read computes it from the
// stored message, with a signature verified, and stores it; before that
// moment a read answers pending, and a wait that reaches it computes then.
func TestAuthLostVerdict(t *testing.T) {
	z := dnstest.Start(t)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	z.Add(t, `example.com. 300 IN TXT "v=spf1 ip4:192.0.2.0/24 ~all"`)
	z.TXT("s1._domainkey.example.com", dnstest.KeyRecord(t, key))
	v := mailauth.New(mailauth.Options{Resolver: z.Addr, Hostname: "mx.burner.test", Timeout: time.Second}, nil, testLogger(t))
	t.Cleanup(func() { v.Shutdown(context.Background()) })
	a, _ := newAPIOptions(t, Options{Verifier: v}, testLogger(t))

	raw := dnstest.Sign(t, []byte("From: a@example.com\r\nSubject: lost\r\n\r\nhi\r\n"), "example.com", "s1", key)
	env := storage.Envelope{ClientIP: netip.MustParseAddr("198.51.100.1"), Helo: "mail.example.com", MailFrom: "bounce@example.com"}
	e := a.deliver("alice@x.test", storage.Message{From: "a@example.com", Raw: raw, Auth: &storage.AuthResult{Status: storage.AuthPending, Envelope: env}})
	path := "/api/v1/emails/" + e.ID + "/auth"
	if res := a.call("GET", path); !contains(res.body, `"status":"pending"`) {
		t.Errorf("GET at once: %s, want pending", res.body)
	}
	a.clock.Advance(v.MaxDelay() + lostMargin)
	res := a.call("GET", path)
	for _, want := range []string{`"status":"done"`, `"spf":{"result":"softfail","domain":"example.com"}`,
		`"dkim":[{"result":"pass","domain":"example.com","selector":"s1"}]`, `"dmarc":{"result":"none","domain":"example.com","policy":null,"spfAligned":false,"dkimAligned":true}`} {
		if !contains(res.body, want) {
			t.Errorf("GET past MaxDelay: %s, want %s", res.body, want)
		}
	}
	if r, err := a.db.Auth(context.Background(), e.ID); err != nil || r.Status != storage.AuthDone || r.SPF.Result != storage.AuthSoftFail {
		t.Errorf("the stored record after the read: %+v, %v; want the verdict computed", r, err)
	}
}
