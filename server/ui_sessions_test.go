package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"
)

// The inbox page leads to its SMTP sessions; each shows what every
// recipient was answered, and its transcript one click away (a details
// element: no script).
func TestUISessions(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	refused := storetest.SMTPSession(storetest.SessionID(1), time.Now(), true, "alice@inbox.test", "bob@inbox.test")
	refused.Recipients[0].Reply, refused.Recipients[0].Fault, refused.Outcome = ptr("451 4.3.0 Try again later"), "rule-1", storage.SMTPFaulted
	refused.Transcript[2].S = "451 4.3.0 Try again later"
	refused.Client.HELO = "<script>alert(1)</script>"
	refused.Data = &storage.SMTPData{Bytes: 42}
	if err := u.db.WriteSMTPSessions(context.Background(), []storage.SMTPSession{refused}); err != nil {
		t.Fatal(err)
	}
	if res := u.get("/inbox/alice"); !strings.Contains(res.body, `href="/inbox/alice/sessions"`) {
		t.Errorf("the inbox page does not link its sessions:\n%s", res.body)
	}
	res := u.get("/inbox/Alice/sessions")
	if res.status != http.StatusOK || res.header.Get("Content-Security-Policy") != uiCSP {
		t.Fatalf("GET /inbox/Alice/sessions: %d, CSP %q", res.status, res.header.Get("Content-Security-Policy"))
	}
	for _, want := range []string{
		`<span class="outcome faulted">faulted</span>`,
		`alice@inbox.test</span> → <span class="mono reply">451 4.3.0 Try again later</span> <span class="badge">fault rule</span>`,
		`bob@inbox.test</span> → <span class="mono reply">250 2.1.5 OK</span>`,
		"<details>", "C: RCPT TO:&lt;alice@inbox.test&gt;\nS: 451 4.3.0 Try again later\n",
		"S: 250-localhost\nS: 250 PIPELINING\n",
		"<dt>Data</dt><dd>42 bytes → <span class=\"mono reply\">(connection closed, no reply)</span>",
		"&lt;script&gt;alert(1)&lt;/script&gt;",
	} {
		if !strings.Contains(res.body, want) {
			t.Errorf("the sessions page lacks %q:\n%s", want, res.body)
		}
	}
	if strings.Contains(res.body, "<script>alert") || strings.Contains(res.body, "<script>") && !strings.Contains(res.body, `<script src=`) {
		t.Errorf("the page carries a script of the client's:\n%s", res.body)
	}
	if res := u.get("/inbox/nobody/sessions"); res.status != http.StatusOK || !strings.Contains(res.body, "No SMTP session named this inbox") {
		t.Errorf("an inbox without sessions: %d\n%s", res.status, res.body)
	}
	if res := u.get("/inbox/a%20b/sessions"); res.status != http.StatusBadRequest {
		t.Errorf("a bad inbox: %d, want 400", res.status)
	}
}

// A scoped session sees only its inboxes' sessions, and of them only its
// recipients; another inbox's page answers 403.
func TestUISessionsScoped(t *testing.T) {
	u := newUI(t, Options{})
	_, secret, err := u.db.CreateKey(context.Background(), "ci", storage.Scope{Inboxes: []string{"ci-*"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	res := u.post("/login", url.Values{"csrf": {u.csrf("/login")}, "key": {secret}, "next": {"/"}})
	if res.status != http.StatusSeeOther {
		t.Fatalf("login with the scoped key: %d", res.status)
	}
	s := storetest.SMTPSession(storetest.SessionID(1), time.Now(), true, "ci-1@inbox.test", "secret-bob@inbox.test")
	if err := u.db.WriteSMTPSessions(context.Background(), []storage.SMTPSession{s}); err != nil {
		t.Fatal(err)
	}
	res = u.get("/inbox/ci-1/sessions")
	if res.status != http.StatusOK || !strings.Contains(res.body, "ci-1@inbox.test") || strings.Contains(res.body, "secret-bob") ||
		!strings.Contains(res.body, "C: RCPT TO:&lt;hidden&gt;") {
		t.Errorf("the scoped view of ci-1's sessions: %d\n%s", res.status, res.body)
	}
	if res := u.get("/inbox/secret-bob/sessions"); res.status != http.StatusForbidden {
		t.Errorf("another inbox's sessions: %d, want 403", res.status)
	}
}
