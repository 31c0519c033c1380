package server

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/postgres"
	"burner/storage/storetest"

	"github.com/jackc/pgx/v5"
)

// node is one burner node of a shared-session test: a server over its
// own engine instance, reached over real HTTP.
type node struct {
	db  *postgres.DB
	url string
}

func newNode(t *testing.T, dbURL string, clk *storetest.Clock) node {
	t.Helper()
	db := openPG(t, dbURL, postgres.Options{Now: clk.Now})
	srv := httptest.NewServer(New(db, Options{UI: true, Now: clk.Now}, testLogger(t)).Handler())
	t.Cleanup(srv.Close)
	return node{db: db, url: srv.URL}
}

// browser is a client that keeps one session cookie by hand, so that it
// can carry it from one node to another, and follows no redirect.
type browser struct {
	t       *testing.T
	client  *http.Client
	session string
	csrf    string // the double-submit cookie of the login form
}

func (b *browser) do(method, base, path string, form url.Values) response {
	b.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.session != "" {
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: b.session})
	}
	if b.csrf != "" {
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: b.csrf})
	}
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, base+path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, c := range res.Cookies() {
		switch c.Name {
		case sessionCookie:
			b.session = c.Value
			if c.MaxAge < 0 {
				b.session = ""
			}
		case csrfCookie:
			b.csrf = c.Value
		}
	}
	return response{status: res.StatusCode, header: res.Header, body: string(data)}
}

// formToken returns the CSRF token of the forms of the page at base+path.
func (b *browser) formToken(base, path string) string {
	b.t.Helper()
	res := b.do("GET", base, path, nil)
	m := csrfRE.FindStringSubmatch(res.body)
	if m == nil {
		b.t.Fatalf("GET %s: %d, no csrf field in\n%s", path, res.status, res.body)
	}
	return m[1]
}

func (b *browser) login(base, key string) {
	b.t.Helper()
	res := b.do("POST", base, "/login", url.Values{"csrf": {b.formToken(base, "/login")}, "key": {key}, "next": {"/"}})
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/" || b.session == "" {
		b.t.Fatalf("POST /login: %d Location %q, session cookie %q; want 303 to / with a session\n%s", res.status, res.header.Get("Location"), b.session, res.body)
	}
}

// TestUISessionOnEveryNode: a web UI session made through one node is
// valid through another on the same database (spec §10), is stored as
// the hash of its token, writes its last activity at most once a minute,
// expires as in memory, and ends on every node at logout or when its key
// is revoked.
func TestUISessionOnEveryNode(t *testing.T) {
	ctx := context.Background()
	dbURL := pgDatabase(t)
	clk := newClock()
	a, b := newNode(t, dbURL, clk), newNode(t, dbURL, clk)
	_, secret, err := a.db.CreateKey(ctx, "ui", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	stored := func(token string) (expires int64, ok bool) {
		t.Helper()
		h := sha256.Sum256([]byte(token))
		err := conn.QueryRow(ctx, `SELECT expires FROM sessions WHERE hash = $1`, h[:]).Scan(&expires)
		if err == pgx.ErrNoRows {
			return 0, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return expires, true
	}

	br := &browser{t: t, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	br.login(a.url, secret)
	if res := br.do("GET", b.url, "/", nil); res.status != http.StatusOK {
		t.Fatalf("GET / on B with the session made on A: %d, want 200\n%s", res.status, res.body)
	}
	var tokens int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE hash = $1`, []byte(br.session)).Scan(&tokens); err != nil || tokens != 0 {
		t.Errorf("a session row keyed by the token itself: %d, %v; want only its hash stored", tokens, err)
	}
	first, ok := stored(br.session)
	if !ok {
		t.Fatal("no session row under the SHA-256 of the token")
	}

	// Activity within a minute writes nothing; past it, the end moves.
	clk.Advance(30 * time.Second)
	br.do("GET", b.url, "/", nil)
	if got, _ := stored(br.session); got != first {
		t.Errorf("session end after a request 30s later = %d, want %d unchanged: at most one write a minute", got, first)
	}
	clk.Advance(31 * time.Second)
	br.do("GET", a.url, "/", nil)
	if got, _ := stored(br.session); got != clk.Now().Add(sessionIdle).UnixMilli() {
		t.Errorf("session end after a request 61s later = %d, want %d: now + %v", got, clk.Now().Add(sessionIdle).UnixMilli(), sessionIdle)
	}

	// Idle past sessionIdle: over on every node.
	clk.Advance(sessionIdle)
	for _, n := range []node{a, b} {
		if res := br.do("GET", n.url, "/", nil); res.status != http.StatusSeeOther || !strings.HasPrefix(res.header.Get("Location"), "/login") {
			t.Errorf("GET / after %v idle: %d Location %q, want a redirect to /login", sessionIdle, res.status, res.header.Get("Location"))
		}
	}

	// Logout on B ends the session on A.
	br.login(a.url, secret)
	token := br.session
	if res := br.do("POST", b.url, "/logout", url.Values{"csrf": {br.formToken(b.url, "/")}}); res.status != http.StatusSeeOther {
		t.Fatalf("POST /logout on B: %d\n%s", res.status, res.body)
	}
	br.session = token // a copy of the cookie kept by whoever stole it
	if res := br.do("GET", a.url, "/", nil); res.status != http.StatusSeeOther {
		t.Errorf("GET / on A after logout on B: %d, want a redirect to /login", res.status)
	}
	if _, ok := stored(token); ok {
		t.Error("session row still stored after logout")
	}

	// Revoking the key ends its sessions on every node at once.
	br.session = ""
	br.login(b.url, secret)
	if res := br.do("GET", a.url, "/", nil); res.status != http.StatusOK {
		t.Fatalf("GET / on A after login on B: %d", res.status)
	}
	if _, err := b.db.RevokeKey(ctx, "ui"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []node{a, b} {
		if res := br.do("GET", n.url, "/", nil); res.status != http.StatusSeeOther {
			t.Errorf("GET / right after the key was revoked: %d, want a redirect to /login", res.status)
		}
	}

	// Expired rows go at a later login on any node.
	_, secret, err = a.db.CreateKey(ctx, "ui2", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	br.session = ""
	br.login(a.url, secret)
	old := br.session
	clk.Advance(sessionIdle + sessionCleanup)
	br.session = ""
	br.login(b.url, secret)
	if _, ok := stored(old); ok {
		t.Error("an expired session row survived a login on another node past the cleanup interval")
	}
}
