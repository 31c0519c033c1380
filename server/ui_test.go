package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"burner/emailjson"
	"burner/storage"
	"burner/storage/boltdb"
)

// uiTest is the real handler with the UI on, over a real data file with a
// fake clock, and a browser-like client: it keeps cookies and does not
// follow redirects, so that tests see them.
type uiTest struct {
	*apiTest
	s      *Server
	client *http.Client
}

func newUI(t *testing.T, opts Options) *uiTest {
	t.Helper()
	opts.UI = true
	a, s := newAPIOptions(t, opts, testLogger(t))
	jar, _ := cookiejar.New(nil)
	client := &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &uiTest{apiTest: a, s: s, client: client}
}

// get fetches path as the browser.
func (u *uiTest) get(path string) response {
	u.t.Helper()
	req, err := http.NewRequest("GET", u.srv.URL+path, nil)
	if err != nil {
		u.t.Fatalf("NewRequest(GET %s): %v", path, err)
	}
	return send(u.t, u.client, req)
}

// post submits form to path as the browser.
func (u *uiTest) post(path string, form url.Values) response {
	u.t.Helper()
	req, err := http.NewRequest("POST", u.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		u.t.Fatalf("NewRequest(POST %s): %v", path, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return send(u.t, u.client, req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the forms of the page at path.
func (u *uiTest) csrf(path string) string {
	u.t.Helper()
	res := u.get(path)
	m := csrfRE.FindStringSubmatch(res.body)
	if m == nil {
		u.t.Fatalf("GET %s: %d, no csrf field in\n%s", path, res.status, res.body)
	}
	return m[1]
}

// login logs the browser in with the test key.
func (u *uiTest) login() response {
	u.t.Helper()
	res := u.post("/login", url.Values{"csrf": {u.csrf("/login")}, "key": {u.key}, "next": {"/"}})
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/" {
		u.t.Fatalf("POST /login with the key: %d Location %q, want 303 to /\n%s", res.status, res.header.Get("Location"), res.body)
	}
	return res
}

// sessionCount returns the number of UI sessions the server holds, expired
// ones included. The data file keeps them; they are counted on a backup
// of it, by removing them all there, so that counting changes nothing the
// server sees.
func (u *uiTest) sessionCount() int {
	u.t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	if _, err := u.db.Backup(ctx, &buf); err != nil {
		u.t.Fatalf("Backup: %v", err)
	}
	path := filepath.Join(u.t.TempDir(), "count.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		u.t.Fatal(err)
	}
	db, err := boltdb.Open(path, boltdb.Options{MustExist: true})
	if err != nil {
		u.t.Fatalf("open the backup: %v", err)
	}
	defer db.Close()
	n, err := db.DeleteExpiredSessions(ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		u.t.Fatalf("DeleteExpiredSessions on the backup: %v", err)
	}
	return n
}

// wantPage checks an HTML answer of status that contains each of want.
func wantPage(t testing.TB, what string, res response, status int, want ...string) {
	t.Helper()
	if res.status != status {
		t.Errorf("%s: status %d, want %d\n%s", what, res.status, status, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("%s: Content-Type %q, want text/html; charset=utf-8", what, ct)
	}
	for _, w := range want {
		if !strings.Contains(res.body, w) {
			t.Errorf("%s: the page does not contain %q:\n%s", what, w, res.body)
		}
	}
}

func wantRedirect(t testing.TB, what string, res response, location string) {
	t.Helper()
	if res.status != http.StatusSeeOther || res.header.Get("Location") != location {
		t.Errorf("%s: %d Location %q, want 303 to %q", what, res.status, res.header.Get("Location"), location)
	}
}

func TestUIRequiresLogin(t *testing.T) {
	u := newUI(t, Options{})
	for path, next := range map[string]string{
		"/":                   "/login?next=%2F",
		"/inbox/alice?q=x":    "/login?next=%2Finbox%2Falice%3Fq%3Dx",
		"/email/" + zeroUUID:  "/login?next=%2Femail%2F" + zeroUUID,
		"/inbox/alice/events": "/login?next=%2Finbox%2Falice%2Fevents",
	} {
		wantRedirect(t, "GET "+path+" without a session", u.get(path), next)
	}
	// A path that is no page is the JSON 404 of spec §4, session or not.
	wantJSON(t, "GET /no/such/page without a session", u.get("/no/such/page"), http.StatusNotFound, `{"error":"Not found."}`)
	wantRedirect(t, "POST /logout without a session", u.post("/logout", nil), "/login")
	wantPage(t, "GET /login", u.get("/login"), http.StatusOK, `<label for="key">API key</label>`, `type="password"`)
}

const zeroUUID = "00000000-0000-4000-8000-000000000000"

func TestUILogin(t *testing.T) {
	u := newUI(t, Options{})
	token := u.csrf("/login?next=/inbox/alice")
	res := u.post("/login", url.Values{"csrf": {token}, "key": {"bnr_wrong"}, "next": {"/inbox/alice"}})
	wantPage(t, "POST /login with a wrong key", res, http.StatusUnauthorized, "Missing or invalid API key.", `value="/inbox/alice"`)
	if c := res.header.Get("Set-Cookie"); strings.Contains(c, sessionCookie) {
		t.Errorf("a wrong key got a session cookie: %s", c)
	}

	res = u.post("/login", url.Values{"csrf": {token}, "key": {u.key}, "next": {"/inbox/alice"}})
	wantRedirect(t, "POST /login with the key", res, "/inbox/alice")
	cookie := res.header.Get("Set-Cookie")
	for _, attr := range []string{sessionCookie + "=", "Path=/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(cookie, attr) {
			t.Errorf("session cookie %q lacks %s", cookie, attr)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("session cookie %q is Secure on plain HTTP: the browser would drop it", cookie)
	}
	if strings.Contains(cookie, u.key) {
		t.Errorf("the session cookie holds the API key: %q", cookie)
	}
	wantPage(t, "GET / after login", u.get("/"), http.StatusOK, "Open an inbox", `action="/logout"`)
	wantRedirect(t, "GET /login when logged in", u.get("/login?next=/inbox/bob"), "/inbox/bob")
	if n := u.sessionCount(); n != 1 {
		t.Errorf("%d sessions after one login, want 1", n)
	}
}

// TestUILoginMetricsKey: a key for metrics alone (spec §14) opens no
// session: the login page answers 403 with the API's message.
func TestUILoginMetricsKey(t *testing.T) {
	u := newUI(t, Options{})
	_, secret, err := u.db.CreateKey(context.Background(), "prom", storage.Scope{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	res := u.post("/login", url.Values{"csrf": {u.csrf("/login")}, "key": {secret}, "next": {"/"}})
	wantPage(t, "POST /login with a metrics key", res, http.StatusForbidden, "This API key may only read metrics.")
	if c := res.header.Get("Set-Cookie"); strings.Contains(c, sessionCookie) {
		t.Errorf("a metrics key got a session cookie: %s", c)
	}
	if n := u.sessionCount(); n != 0 {
		t.Errorf("%d sessions after a metrics key's login, want 0", n)
	}
	wantRedirect(t, "GET / after a metrics key's login", u.get("/"), "/login?next=%2F")
}

func TestUILoginSecureCookie(t *testing.T) {
	u := newUI(t, Options{})
	token := u.csrf("/login")
	req, _ := http.NewRequest("POST", u.srv.URL+"/login", strings.NewReader(url.Values{"csrf": {token}, "key": {u.key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https") // a TLS-terminating proxy in front
	res := send(t, u.client, req)
	if c := res.header.Get("Set-Cookie"); res.status != http.StatusSeeOther || !strings.Contains(c, "; Secure") {
		t.Errorf("login behind an https proxy: %d Set-Cookie %q, want a Secure cookie", res.status, c)
	}
}

func TestUILoginNext(t *testing.T) {
	for next, want := range map[string]string{
		"/inbox/alice?q=x":    "/inbox/alice?q=x",
		"":                    "/",
		"//evil.test/":        "/",
		"https://evil.test/":  "/",
		"/\\evil.test":        "/",
		"javascript:alert(1)": "/",
	} {
		if got := localNext(next); got != want {
			t.Errorf("localNext(%q) = %q, want %q", next, got, want)
		}
	}
}

func TestUILogout(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	old := u.client.Jar.Cookies(mustURL(t, u.srv.URL))
	wantRedirect(t, "POST /logout", u.post("/logout", url.Values{"csrf": {u.csrf("/")}}), "/login")
	wantRedirect(t, "GET / after logout", u.get("/"), "/login?next=%2F")
	// The old token is dead on the server, not only forgotten by the browser.
	u.client.Jar.SetCookies(mustURL(t, u.srv.URL), old)
	wantRedirect(t, "GET / with the token of a session logged out", u.get("/"), "/login?next=%2F")
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	p, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A revoked key ends its sessions at once (spec §1).
func TestUIRevokedKeyEndsSession(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	wantPage(t, "GET / logged in", u.get("/"), http.StatusOK)
	if _, err := u.db.RevokeKey(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, "GET / after the key was revoked", u.get("/"), "/login?next=%2F")
	if n := u.sessionCount(); n != 0 {
		t.Errorf("%d sessions left after the key was revoked, want 0", n)
	}
}

func TestUISessionExpiry(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	// Each request restarts the idle time.
	for range 3 {
		u.clock.Advance(sessionIdle - time.Minute)
		wantPage(t, "GET / within the idle time", u.get("/"), http.StatusOK)
	}
	u.clock.Advance(sessionIdle)
	wantRedirect(t, "GET / after 12h idle", u.get("/"), "/login?next=%2F")
	// Logging in again drops the expired sessions.
	u.login()
	if n := u.sessionCount(); n != 1 {
		t.Errorf("%d sessions after a new login, want 1", n)
	}
}

// Every state-changing form needs its CSRF token.
func TestUICSRFRefused(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	token := u.csrf("/")
	e := u.deliver("alice@example.com", storage.Message{From: "bob@example.com"})
	const refused = "This form has expired or was sent from another site."
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/email/" + e.ID + "/delete", nil},
		{"/email/" + e.ID + "/delete", url.Values{"csrf": {"forged"}}},
		{"/email/" + e.ID + "/delete", url.Values{"csrf": {""}}},
		{"/inbox/alice/clear", url.Values{"csrf": {token + "x"}}},
		{"/logout", url.Values{"csrf": {strings.ToUpper(token)}}},
		{"/login", url.Values{"key": {u.key}}},
	} {
		wantPage(t, "POST "+tc.path+" with csrf "+tc.form.Get("csrf"), u.post(tc.path, tc.form), http.StatusForbidden, refused)
	}
	if _, err := u.db.Email(context.Background(), e.ID); err != nil {
		t.Errorf("the email is gone after refused forms: %v", err)
	}
	wantPage(t, "GET / after refused forms", u.get("/"), http.StatusOK) // still logged in

	// What the browser marks as cross-site is refused even with the token.
	req, _ := http.NewRequest("POST", u.srv.URL+"/email/"+e.ID+"/delete", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	wantPage(t, "a cross-site POST with the token", send(t, u.client, req), http.StatusForbidden, "Cross-site requests are refused.")
	if _, err := u.db.Email(context.Background(), e.ID); err != nil {
		t.Errorf("the email is gone after a cross-site POST: %v", err)
	}
}

func TestUIHome(t *testing.T) {
	u := newUI(t, Options{Domains: []string{"inbox.test", "Other.Test"}})
	u.login()
	wantPage(t, "GET /", u.get("/"), http.StatusOK,
		`<form method="get" action="/inbox"`, `<label for="to">`, "<code>@inbox.test</code>", "<code>@other.test</code>")
	wantRedirect(t, "GET /inbox?to=Alice+x (form-encoded space)", u.get("/inbox?to=Alice%2Bx"), "/inbox/Alice+x")
	wantRedirect(t, "GET /inbox?to= alice ", u.get("/inbox?to=+alice+"), "/inbox/alice")
	// As html/template writes them.
	const (
		invalid = "Invalid local part. Only alphanumeric characters and _-&#43;. are allowed."
		tooLong = "Local part must be at most 64 characters."
	)
	for typed, msg := range map[string]string{
		"":                      "&#39;to&#39; is required.",
		"bad!char":              invalid,
		"al ice":                invalid,
		"a&to=b":                invalid,
		"a%2Fb":                 invalid,
		"<script>":              invalid,
		strings.Repeat("a", 65): tooLong,
	} {
		res := u.get("/inbox?" + url.Values{"to": {typed}}.Encode())
		wantPage(t, "GET /inbox?to="+typed, res, http.StatusBadRequest, msg, `aria-invalid="true"`)
		if strings.Contains(res.body, "<script>") {
			t.Errorf("GET /inbox?to=%s: the typed text is not escaped", typed)
		}
	}
	for path, msg := range map[string]string{
		"/inbox/bad!char":                              invalid,
		"/inbox/a%20b":                                 invalid,
		"/inbox/" + strings.Repeat("b", 65):            tooLong,
		"/inbox/" + strings.Repeat("b", 65) + "/clear": tooLong,
	} {
		wantPage(t, "GET "+path, u.get(path), http.StatusBadRequest, msg)
	}
}

func TestUIInbox(t *testing.T) {
	u := newUI(t, Options{Domains: []string{"inbox.test", "other.test"}})
	u.login()
	first := u.deliver("alice@inbox.test", storage.Message{From: "shop@sender.test", FromName: "Shop", Subject: ptr("Welcome"), Text: "hello"})
	u.deliver("bob@inbox.test", storage.Message{From: "x@sender.test", Subject: ptr("Not for alice")})
	evil := u.deliver("Alice@other.test", storage.Message{From: "eve@sender.test", Subject: ptr(`<script>alert(1)</script>`), Text: "confirm code 42"})
	if err := u.db.MarkRead(context.Background(), first.ID); err != nil {
		t.Fatal(err)
	}

	res := u.get("/inbox/alice")
	wantPage(t, "GET /inbox/alice", res, http.StatusOK,
		"<code class=\"copy\">alice@inbox.test</code>", "<code class=\"copy\">alice@other.test</code>",
		`data-events="/inbox/alice/events"`, "Shop", "Welcome", "eve@sender.test",
		"&lt;script&gt;alert(1)&lt;/script&gt;", `<time datetime="2025-03-14T15:09:29.535Z">2025-03-14 15:09:29 UTC</time>`,
		`href="/email/`+evil.ID+`"`, `action="/email/`+evil.ID+`/delete"`, `href="/inbox/alice/clear"`)
	if strings.Contains(res.body, "Not for alice") {
		t.Error("alice's inbox lists bob's email")
	}
	if strings.Contains(res.body, "<script>alert") {
		t.Error("the subject is not escaped")
	}
	// Newest first, the unread one marked.
	if i, j := strings.Index(res.body, evil.ID), strings.Index(res.body, first.ID); i < 0 || j < 0 || i > j {
		t.Errorf("the newest email is not listed first")
	}
	if got := strings.Count(res.body, `class="email unread"`); got != 1 {
		t.Errorf("%d emails marked unread, want 1", got)
	}

	for q, want := range map[string][]string{
		"in=subject&q=WELCOME": {first.ID},
		"in=body&q=code+42":    {evil.ID},
		"q=shop+welcome":       {first.ID},
		"in=nonsense&q=eve":    {evil.ID},
		"q=":                   {first.ID, evil.ID},
		"in=subject&q=nothing": {},
		"in=from&q=SHOP":       {first.ID}, // the sender's name and address (spec §14)
		"in=from&q=eve@":       {evil.ID},
		"in=from&q=welcome":    {}, // the subject is no sender
	} {
		res := u.get("/inbox/alice?" + q)
		wantPage(t, "GET /inbox/alice?"+q, res, http.StatusOK)
		for _, e := range []storage.Email{first, evil} {
			listed := strings.Contains(res.body, `href="/email/`+e.ID+`"`)
			if want := strings.Contains(strings.Join(want, " "), e.ID); listed != want {
				t.Errorf("GET /inbox/alice?%s lists %s: %v, want %v", q, e.ID, listed, want)
			}
		}
	}
	wantPage(t, "a filter that matches nothing", u.get("/inbox/alice?in=subject&q=nothing"), http.StatusOK, "No email matches this filter.")
	wantPage(t, "a filter by sender", u.get("/inbox/alice?in=from&q=shop"), http.StatusOK, `<option value="from" selected>sender</option>`)
	wantPage(t, "an empty inbox", u.get("/inbox/nobody"), http.StatusOK, "No emails yet.")
}

func TestUIInboxPaging(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	var all []storage.Email
	for range pageSize + 5 {
		all = append(all, u.deliver("many@example.com", storage.Message{From: "a@example.com", Subject: ptr("s")}))
	}
	res := u.get("/inbox/many")
	if n := strings.Count(res.body, `<li class="email`); n != pageSize {
		t.Errorf("the first page lists %d emails, want %d", n, pageSize)
	}
	older := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(res.body)
	if older == nil {
		t.Fatalf("the first page of %d emails has no Older link:\n%s", len(all), res.body)
	}
	next := strings.ReplaceAll(older[1], "&amp;", "&")
	if want := "/inbox/many?before=" + all[5].ID; next != want {
		t.Errorf("Older links to %q, want %q", next, want)
	}
	res = u.get(next)
	if n := strings.Count(res.body, `<li class="email`); n != 5 {
		t.Errorf("the second page lists %d emails, want 5", n)
	}
	for _, w := range []string{`href="/email/` + all[0].ID + `"`, "← Newest"} {
		if !strings.Contains(res.body, w) {
			t.Errorf("the second page lacks %s", w)
		}
	}
	if strings.Contains(res.body, `rel="next"`) || strings.Contains(res.body, "data-events") {
		t.Error("the last page has an Older link or is live")
	}
	// A page that starts at an email deleted since starts over.
	if err := u.db.Delete(context.Background(), all[5].ID); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, "GET a page after its first email", u.get(next), "/inbox/many")
}

// The read transition of spec §3: the API shows false, the UI page is
// opened, the API shows true.
func TestUIEmailMarksRead(t *testing.T) {
	u := newUI(t, Options{})
	e := u.deliver("alice@example.com", storage.Message{From: "shop@example.com", Subject: ptr("Hi"), Body: ptr("<p>hello</p>")})
	readFlag := func() bool {
		t.Helper()
		res := u.call("GET", "/api/v1/emails/"+e.ID)
		var got emailjson.Email
		if err := json.Unmarshal([]byte(res.body), &got); err != nil || res.status != 200 {
			t.Fatalf("GET /api/v1/emails/%s: %d %s", e.ID, res.status, res.body)
		}
		return got.Read
	}
	if readFlag() {
		t.Fatal("a new email is read before anyone opened it")
	}
	u.login()
	wantPage(t, "GET /inbox/alice", u.get("/inbox/alice"), http.StatusOK, `class="email unread"`)
	if readFlag() {
		t.Fatal("listing the inbox in the UI marked the email read")
	}
	req, _ := http.NewRequest("HEAD", u.srv.URL+"/email/"+e.ID, nil)
	if res := send(t, u.client, req); res.status != http.StatusOK {
		t.Errorf("HEAD /email/%s: %d, want 200", e.ID, res.status)
	}
	if readFlag() {
		t.Fatal("a HEAD of the email page marked the email read")
	}
	wantPage(t, "GET /email/"+e.ID, u.get("/email/"+e.ID), http.StatusOK, "Hi", "shop@example.com")
	if !readFlag() {
		t.Error("after the email page was opened, the API shows read = false, want true")
	}
	if res := u.get("/inbox/alice"); strings.Contains(res.body, "unread") {
		t.Error("the inbox still marks the opened email unread")
	}
}

func TestUIEmailPage(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	raw := "From: Shop <shop@example.com>\r\nTo: alice@example.com\r\nSubject: Files\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/html\r\n\r\n<p>see</p>\r\n" +
		"--b\r\nContent-Type: text/html\r\nContent-Disposition: attachment; filename=\"x\\\"><b>.html\"\r\n\r\n<script>alert(1)</script>\r\n" +
		"--b--\r\n"
	body := `<p style="color:red">Hello &amp; "welcome"</p><a href="https://example.com/c?a=1&amp;b=2">confirm</a>`
	e := u.deliver("alice@example.com", storage.Message{From: "shop@example.com", FromName: "Shop", Subject: ptr("Files"), Body: &body, Raw: []byte(raw)})

	res := u.get("/email/" + e.ID)
	wantPage(t, "GET /email/"+e.ID, res, http.StatusOK, "Files", "Shop", "&lt;shop@example.com&gt;", "alice@example.com",
		"2025-03-14 15:09:27 UTC", `href="/email/`+e.ID+`/raw"`, `href="/email/`+e.ID+`/attachments/0"`, "text/html, 25 B", `x&#34;&gt;&lt;b&gt;.html`,
		`href="/inbox/alice"`)
	if got := res.header.Get("Content-Security-Policy"); got != emailCSPNoRemote {
		t.Errorf("email page CSP %q, want %q (no remote images by default)", got, emailCSPNoRemote)
	}
	doc, err := xhtml.Parse(strings.NewReader(res.body))
	if err != nil {
		t.Fatal(err)
	}
	frames := findElements(doc, "iframe")
	if len(frames) != 1 {
		t.Fatalf("the email page has %d iframes, want 1", len(frames))
	}
	// Exactly what README documents: links open in a new tab that is an
	// ordinary page, and nothing else is allowed.
	if sandbox, ok := attr(frames[0], "sandbox"); sandbox != "allow-popups allow-popups-to-escape-sandbox" {
		t.Errorf("iframe sandbox=%q (present %v), want %q", sandbox, ok, "allow-popups allow-popups-to-escape-sandbox")
	}
	if _, ok := attr(frames[0], "src"); ok {
		t.Error("the iframe has a src; the body belongs in srcdoc")
	}
	srcdoc, _ := attr(frames[0], "srcdoc")
	if !strings.Contains(srcdoc, "<body>"+body+"</body>") || !strings.Contains(srcdoc, `<meta name="referrer" content="no-referrer">`) {
		t.Errorf("iframe srcdoc = %q, want the body whole, in a document that sends no referrer", srcdoc)
	}
	if strings.Contains(res.body, `<p style="color:red">`) {
		t.Error("the body is in the page unescaped, outside the iframe")
	}
	if len(findElements(doc, "script")) != 1 || strings.Contains(res.body, "<script>") {
		t.Error("the page has inline script")
	}

	res = u.get("/email/" + e.ID + "/attachments/0")
	if res.status != 200 || res.body != "<script>alert(1)</script>" || res.header.Get("Content-Type") != "text/html" ||
		!strings.HasPrefix(res.header.Get("Content-Disposition"), "attachment;") || !strings.Contains(res.header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("GET attachment 0: %d %q %v, want the file as a sandboxed download", res.status, res.body, res.header)
	}
	for _, n := range []string{"1", "-1", "01", "x"} {
		wantPage(t, "GET attachment "+n, u.get("/email/"+e.ID+"/attachments/"+n), http.StatusNotFound, "Attachment not found")
	}

	res = u.get("/email/" + e.ID + "/raw")
	wantPage(t, "GET raw", res, http.StatusOK, "Subject: Files", "&lt;script&gt;alert(1)&lt;/script&gt;")
	res = u.get("/email/" + e.ID + "/download")
	if res.status != 200 || res.body != raw || res.header.Get("Content-Type") != "message/rfc822" ||
		res.header.Get("Content-Disposition") != `attachment; filename=`+e.ID+`.eml` {
		t.Errorf("GET download: %d %v, want the message as a file", res.status, res.header)
	}

	for _, path := range []string{"/email/" + zeroUUID, "/email/not-a-uuid", "/email/" + zeroUUID + "/raw", "/email/" + zeroUUID + "/attachments/0"} {
		wantPage(t, "GET "+path, u.get(path), http.StatusNotFound, "Email not found")
	}
}

// TestUIEmailAuth: the email page shows a line of SPF / DKIM / DMARC /
// TLS badges (spec §12), and the full result, the Authentication-Results
// value included, one click away in a details element (no script); names
// from the mail are escaped; pending and off say so.
func TestUIEmailAuth(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	r := specAuth
	r.DKIM = []storage.DKIMResult{{Result: storage.AuthFail, Domain: "evil.test", Selector: "<b>x</b>", Error: "body hash did not verify"}, specAuth.DKIM[0]}
	e := u.deliverAuth("alice@example.com", r)
	res := u.get("/email/" + e.ID)
	wantPage(t, "GET an email with its verdicts", res, http.StatusOK,
		`<span class="badge badge-pass">SPF <b>pass</b></span>`, `<span class="badge badge-pass">DKIM <b>pass</b></span>`,
		`<span class="badge badge-pass">DMARC <b>pass</b></span>`, `<span class="badge badge-pass">TLS <b>TLS 1.3</b></span>`,
		"<details>", "<summary>What burner's MX saw</summary>", "203.0.113.7", "resolves back", "TLS_AES_128_GCM_SHA256",
		"&lt;bounce@example.com&gt;", `<b>fail</b> for <span class="mono">evil.test</span>, selector <span class="mono">&lt;b&gt;x&lt;/b&gt;</span>: body hash did not verify`,
		"policy reject; SPF aligned, DKIM aligned", `<code class="copy">`+specAuth.AuthenticationResults+`</code>`)

	failed := specAuth
	failed.Envelope.TLS, failed.SPF.Result, failed.DKIM, failed.DMARC.Result = nil, storage.AuthSoftFail, nil, storage.AuthFail
	e = u.deliverAuth("alice@example.com", failed)
	wantPage(t, "GET an email that fails", u.get("/email/"+e.ID), http.StatusOK,
		`<span class="badge badge-warn">SPF <b>softfail</b></span>`, `<span class="badge badge-none">DKIM <b>none</b></span>`,
		`<span class="badge badge-fail">DMARC <b>fail</b></span>`, `<span class="badge badge-none">TLS <b>none</b></span>`, "none (unsigned)", "none (no STARTTLS)")

	e = u.deliverAuth("alice@example.com", storage.AuthResult{Status: storage.AuthPending, Envelope: storage.Envelope{Helo: "h.test"}})
	wantPage(t, "GET a pending email", u.get("/email/"+e.ID), http.StatusOK, `SPF <b>pending</b>`, `DKIM <b>pending</b>`, `DMARC <b>pending</b>`, "&lt;&gt; (the null sender)")
	e = u.deliver("alice@example.com", storage.Message{})
	res = u.get("/email/" + e.ID)
	wantPage(t, "GET an email without a record", res, http.StatusOK, "SPF, DKIM and DMARC not verified", `TLS <b>none</b>`)
	if strings.Contains(res.body, "SPF <b>") {
		t.Errorf("an email without a record shows verdicts")
	}
}

func TestUIEmailWithoutBody(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	e := u.deliver("alice@example.com", storage.Message{})
	res := u.get("/email/" + e.ID)
	wantPage(t, "GET an email without body", res, http.StatusOK, "(no subject)", "(no sender)", "This email has no text body.")
	if strings.Contains(res.body, "<iframe") {
		t.Error("an email without a body got an iframe")
	}
}

func findElements(n *xhtml.Node, tag string) []*xhtml.Node {
	var out []*xhtml.Node
	for d := range n.Descendants() {
		if d.Type == xhtml.ElementNode && d.Data == tag {
			out = append(out, d)
		}
	}
	return out
}

func attr(n *xhtml.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func TestUIDelete(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	e := u.deliver("alice@example.com", storage.Message{From: "a@example.com"})
	keep := u.deliver("alice@example.com", storage.Message{From: "b@example.com"})
	token := u.csrf("/inbox/alice")
	wantRedirect(t, "POST delete", u.post("/email/"+e.ID+"/delete", url.Values{"csrf": {token}, "next": {"/inbox/alice?q=a"}}), "/inbox/alice?q=a")
	if _, err := u.db.Email(context.Background(), e.ID); err == nil {
		t.Error("the email is still there after the UI deleted it")
	}
	if _, err := u.db.Email(context.Background(), keep.ID); err != nil {
		t.Errorf("the other email is gone: %v", err)
	}
	wantPage(t, "POST delete again", u.post("/email/"+e.ID+"/delete", url.Values{"csrf": {token}}), http.StatusNotFound, "Email not found")
	wantRedirect(t, "POST delete with a foreign next", u.post("/email/"+keep.ID+"/delete", url.Values{"csrf": {token}, "next": {"//evil.test"}}), "/")
}

func TestUIClear(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	for range 3 {
		u.deliver("alice@example.com", storage.Message{From: "a@example.com"})
	}
	other := u.deliver("bob@example.com", storage.Message{From: "a@example.com"})
	res := u.get("/inbox/alice/clear")
	wantPage(t, "GET the confirmation", res, http.StatusOK, "Clear inbox", `action="/inbox/alice/clear"`, `href="/inbox/alice"`)
	if got, _ := u.db.List(context.Background(), storage.Query{LocalPart: "alice"}); len(got) != 3 {
		t.Fatalf("the confirmation page deleted mail: %d left", len(got))
	}
	token := csrfRE.FindStringSubmatch(res.body)[1]
	wantRedirect(t, "POST clear", u.post("/inbox/alice/clear", url.Values{"csrf": {token}}), "/inbox/alice")
	if got, _ := u.db.List(context.Background(), storage.Query{LocalPart: "alice"}); len(got) != 0 {
		t.Errorf("%d emails left after clearing", len(got))
	}
	if _, err := u.db.Email(context.Background(), other.ID); err != nil {
		t.Errorf("clearing alice deleted bob's email: %v", err)
	}
}

func TestUIPublic(t *testing.T) {
	u := newUI(t, Options{Public: true})
	e := u.deliver("alice@example.com", storage.Message{From: "a@example.com", Subject: ptr("open")})
	res := u.get("/inbox/alice")
	wantPage(t, "GET an inbox of a public UI", res, http.StatusOK, "open")
	if strings.Contains(res.body, "/logout") {
		t.Error("a public UI without a session offers to log out")
	}
	wantRedirect(t, "GET /login of a public UI", u.get("/login"), "/")
	wantPage(t, "POST delete without a token", u.post("/email/"+e.ID+"/delete", nil), http.StatusForbidden)
	token := csrfRE.FindStringSubmatch(res.body)[1]
	wantRedirect(t, "POST delete with the token", u.post("/email/"+e.ID+"/delete", url.Values{"csrf": {token}, "next": {"/inbox/alice"}}), "/inbox/alice")
	// The token is tied to the browser's cookie: another browser cannot use it.
	other := &http.Client{CheckRedirect: u.client.CheckRedirect}
	req, _ := http.NewRequest("POST", u.srv.URL+"/inbox/alice/clear", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	wantPage(t, "POST with another browser's token", send(t, other, req), http.StatusForbidden)
}

func TestUISecurityHeaders(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	e := u.deliver("alice@example.com", storage.Message{From: "a@example.com", Body: ptr("x")})
	for _, path := range []string{"/", "/login", "/inbox/alice", "/email/" + e.ID, "/email/" + e.ID + "/raw", "/inbox/alice/clear", "/nope", "/static/style.css"} {
		res := u.get(path)
		if res.status != 200 && res.status != 404 && res.status != 303 {
			t.Errorf("GET %s: status %d", path, res.status)
		}
		csp := res.header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("GET %s: CSP %q lacks %s", path, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
			t.Errorf("GET %s: CSP %q allows inline script", path, csp)
		}
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"} {
			if got := res.header.Get(h); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, h, got, want)
			}
		}
	}
	if got := u.get("/").header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("a page has Cache-Control %q, want no-store: it shows mail", got)
	}
}

func TestUIStatic(t *testing.T) {
	u := newUI(t, Options{})
	for name, ctype := range map[string]string{"style.css": "text/css; charset=utf-8", "live.js": "text/javascript; charset=utf-8", "frame.css": "text/css; charset=utf-8", "icon.svg": "image/svg+xml"} {
		link, err := u.s.web.staticURL(name)
		if err != nil {
			t.Fatal(err)
		}
		res := u.get(link)
		if res.status != 200 || res.header.Get("Content-Type") != ctype || res.body == "" {
			t.Errorf("GET %s: %d %q, want 200 %s", link, res.status, res.header.Get("Content-Type"), ctype)
		}
		if cc := res.header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("GET %s: Cache-Control %q, want immutable", link, cc)
		}
		if cc := u.get("/static/" + name).header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET /static/%s without its hash: Cache-Control %q, want no-cache", name, cc)
		}
	}
	for _, path := range []string{"/static/nope.css", "/static/", "/static/../ui.go"} {
		// 307: the mux cleans the path first; then it is not a static file.
		if res := u.get(path); res.status != 303 && res.status != 404 && res.status != 307 {
			t.Errorf("GET %s: %d, want 404 (or a login redirect)", path, res.status)
		}
	}
}

func TestUIRoutes(t *testing.T) {
	u := newUI(t, Options{Public: true})
	// spec §4: unknown paths and wrong methods get JSON, beside the UI too.
	wantJSON(t, "GET /nope", u.get("/nope"), http.StatusNotFound, `{"error":"Not found."}`)
	res := u.post("/email/"+zeroUUID, url.Values{"csrf": {u.csrf("/inbox/x/clear")}})
	wantJSON(t, "POST an email page", res, http.StatusMethodNotAllowed, `{"error":"Method not allowed."}`)
	if got := res.header.Get("Allow"); got != "GET, HEAD" {
		t.Errorf("POST an email page: Allow %q, want GET, HEAD", got)
	}
	// The API and /healthz keep their JSON answers beside the UI.
	wantJSON(t, "GET /healthz", u.callAuth("GET", "/healthz", ""), 200, `{"status":"ok"}`)
	wantUnauthorized(t, "GET /api/v1/emails without a key", u.callAuth("GET", "/api/v1/emails?to=a", ""))
	wantJSON(t, "GET /api/v1/nope", u.call("GET", "/api/v1/nope"), 404, notFoundBody)
}

// The inbox page's event stream: new emails arrive as events, and the
// stream ends when the session's key is revoked.
func TestUIEvents(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	req, _ := http.NewRequest("GET", u.srv.URL+"/inbox/alice/events", nil)
	resp, err := u.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	e := u.deliver("alice@example.com", storage.Message{From: "a@example.com"})
	waitLine := func(want string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended before %q", want)
				}
				if l == want {
					return
				}
			case <-timeout:
				t.Fatalf("no %q in the stream within 10s", want)
			}
		}
	}
	waitLine("id: " + e.ID)
	if _, err := u.db.RevokeKey(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return // the stream ended with its key
			}
		case <-timeout:
			t.Fatal("the stream of a revoked key still runs after 10s")
		}
	}
}

func TestCheckLocalPart(t *testing.T) {
	for in, want := range map[string]string{
		"alice": "", "Alice+x.y_z-1": "", strings.Repeat("a", 64): "",
		"": "'to' is required.", "a b": "Invalid local part.", "a&to=b": "Invalid local part.", "a%41": "Invalid local part.",
		"é": "Invalid local part.", strings.Repeat("a", 65): "Local part must be at most 64 characters.",
	} {
		err := checkLocalPart(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("checkLocalPart(%q) = %v; want nil", in, err)
		case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
			t.Errorf("checkLocalPart(%q) = %v; want an error %q", in, err, want)
		}
	}
}

// TestUIRecentInboxes: the home page lists the inboxes with the newest
// mail first, with counts and links, 50 at most with a word on the rest;
// a prefix narrows the list (any case), and one that is no start of a
// local part is refused with the API's message.
func TestUIRecentInboxes(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	wantPage(t, "GET / with no mail", u.get("/"), 200, "Recent inboxes", "No inbox holds mail yet.")
	u.deliver("alice@example.com", storage.Message{Subject: ptr("1")})
	u.deliver("pytest-3f9a@example.com", storage.Message{Subject: ptr("2")})
	u.deliver("Alice@example.com", storage.Message{Subject: ptr("3")})
	u.deliver("bob@example.com", storage.Message{Subject: ptr("4")})
	res := u.get("/")
	wantPage(t, "GET /", res, 200, `href="/inbox/pytest-3f9a"`, "2 emails", "1 email<")
	order := []string{`href="/inbox/bob"`, `href="/inbox/alice"`, `href="/inbox/pytest-3f9a"`}
	for i := 1; i < len(order); i++ {
		if a, b := strings.Index(res.body, order[i-1]), strings.Index(res.body, order[i]); a < 0 || b < 0 || a > b {
			t.Errorf("GET / lists %s at %d and %s at %d; want the newest mail first", order[i-1], a, order[i], b)
		}
	}
	if strings.Contains(res.body, "Type the start of a name") {
		t.Error("GET / of 3 inboxes says there are more")
	}
	res = u.get("/?prefix=PyTest-")
	wantPage(t, "GET /?prefix=PyTest-", res, 200, `href="/inbox/pytest-3f9a"`, `value="PyTest-"`, `href="/">Show all`)
	if strings.Contains(res.body, `href="/inbox/alice"`) {
		t.Error("GET /?prefix=PyTest- lists alice")
	}
	wantPage(t, "GET /?prefix=zz", u.get("/?prefix=zz"), 200, "No inbox whose name starts with")
	wantPage(t, "GET /?prefix=a%20b", u.get("/?prefix=a%20b"), 400, "Invalid local part. Only alphanumeric characters")

	for i := range recentSize + 2 {
		u.deliver(fmt.Sprintf("ci-%03d@example.com", i), storage.Message{Subject: ptr("ci")})
	}
	res = u.get("/")
	if n := strings.Count(res.body, `<li><a href="/inbox/`); n != recentSize {
		t.Errorf("GET / of %d inboxes lists %d, want %d", recentSize+6, n, recentSize)
	}
	wantPage(t, "GET / of many inboxes", res, 200, `href="/inbox/ci-051"`, "Type the start of a name to find others.")
	if strings.Contains(res.body, `href="/inbox/bob"`) {
		t.Error("GET / of many inboxes lists bob, whose mail is older than 50 others'")
	}
	wantPage(t, "GET /?prefix=bob among many", u.get("/?prefix=bob"), 200, `href="/inbox/bob"`)
}

// TestUIRecentInboxesScoped: a scoped session's home page lists its own
// inboxes alone (spec §8), and says which it reaches.
func TestUIRecentInboxesScoped(t *testing.T) {
	u := scopeUI(t, storage.Scope{Inboxes: []string{"ci-*", "alice"}, ReadOnly: true})
	for _, to := range []string{"ci-7", "bob", "alice", "alice-x", "ci-8"} {
		u.deliver(to+"@example.com", storage.Message{Subject: ptr(to)})
	}
	res := u.get("/")
	wantPage(t, "GET / of a scoped session", res, 200, `href="/inbox/ci-8"`, `href="/inbox/alice"`, `href="/inbox/ci-7"`,
		"This key reaches only the inboxes <code>ci-*</code>, <code>alice</code>.")
	for _, out := range []string{`href="/inbox/bob"`, `href="/inbox/alice-x"`} {
		if strings.Contains(res.body, out) {
			t.Errorf("GET / of a scoped session lists %s", out)
		}
	}
	if res := u.get("/?prefix=b"); strings.Contains(res.body, `href="/inbox/bob"`) {
		t.Error("GET /?prefix=b of a scoped session lists bob")
	}
}
