package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"burner/storage"
)

// A public MX under attack (docs/hostile-mail.md): the tests of the HTTP
// and UI parts.

func TestLocalNextHostile(t *testing.T) {
	for next, want := range map[string]string{
		// Paths of ours stay as they are.
		"/":                           "/",
		"/inbox/alice":                "/inbox/alice",
		"/inbox/alice?q=x&in=body":    "/inbox/alice?q=x&in=body",
		"/inbox/alice%2Bx?before=abc": "/inbox/alice%2Bx?before=abc",
		"/email/" + zeroUUID:          "/email/" + zeroUUID,
		"/inbox/a?q=%2F%2Fnot-a-host": "/inbox/a?q=%2F%2Fnot-a-host",
		"/./inbox/alice":              "/./inbox/alice",
		// Another site, or what browsers read as one.
		"":                      "/",
		"//evil.example/":       "/",
		"///evil.example/":      "/",
		"/\\evil.example":       "/",
		"\\/evil.example":       "/",
		"\\\\evil.example":      "/",
		"/\t/evil.example/":     "/", // GET /login?next=/%09/evil.example/
		"/\n/evil.example/":     "/",
		"/\r/evil.example/":     "/",
		"/ /evil.example/":      "/ /evil.example/", // a space is no control character: a path here
		"/\x00/evil.example/":   "/",
		"/\x7f/evil.example/":   "/",
		"/\u0085/evil.example/": "/", // a C1 control
		"/a/../\\evil.example":  "/", // http.Redirect cleans it to /\evil.example
		"/inbox/x\\y":           "/",
		"/x\t":                  "/",
		" /inbox/alice":         "/",
		"https://evil.example/": "/",
		"http:/evil.example":    "/",
		"javascript:alert(1)":   "/",
		"evil.example":          "/",
		// Percent-encoded forms of the same.
		"/%2F/evil.example/": "/",
		"/%2fevil.example":   "/",
		"/%5Cevil.example":   "/",
		"/%09/evil.example/": "/",
		"/%0A/evil.example/": "/",
		"/inbox/alice?q=%00": "/",
		"/%zz":               "/", // not decodable
	} {
		if got := localNext(next); got != want {
			t.Errorf("localNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// TestUINextOpenRedirect: the pages that take a next (the login page, GET
// and POST, and the delete form) send a hostile one home.
func TestUINextOpenRedirect(t *testing.T) {
	u := newUI(t, Options{})
	const hostile = "/%09/evil.example/" // as it appears in a URL's query: /<TAB>/evil.example/
	// Not logged in: the login form carries home, not the hostile next.
	res := u.get("/login?next=" + hostile)
	wantPage(t, "GET /login?next="+hostile, res, http.StatusOK, `name="next" value="/"`)
	if strings.Contains(res.body, "evil.example") {
		t.Errorf("the login page carries the hostile next:\n%s", res.body)
	}
	token := u.csrf("/login")
	raw, _ := url.PathUnescape(hostile)
	res = u.post("/login", url.Values{"csrf": {token}, "key": {u.key}, "next": {raw}})
	wantRedirect(t, "POST /login with next "+hostile, res, "/")
	// Logged in: the login page redirects at once, home.
	wantRedirect(t, "GET /login?next="+hostile+" with a session", u.get("/login?next="+hostile), "/")
	wantRedirect(t, "GET /login?next=/a/../%5C%5Cevil.example with a session", u.get("/login?next=/a/../%5C%5Cevil.example"), "/")
	e := u.deliver("alice@example.com", storage.Message{Subject: ptr("x")})
	res = u.post("/email/"+e.ID+"/delete", url.Values{"csrf": {u.csrf("/")}, "next": {raw}})
	wantRedirect(t, "POST delete with next "+hostile, res, "/")
}

// imageEmail is a body with a remote image, as the sanitizer keeps it.
const imageEmail = `<p>Hi</p><img src="https://img.example/pixel.png?u=alice" alt="the logo">`

func TestUIRemoteImages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		query  string
		csp    string
		notice bool
	}{
		{"default", Options{}, "", emailCSPNoRemote, true},
		{"default, loaded for this view", Options{}, "?images=1", emailCSP, false},
		{"default, another value", Options{}, "?images=yes", emailCSPNoRemote, true},
		{"ui.remote_images", Options{RemoteImages: true}, "", emailCSP, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUI(t, tc.opts)
			u.login()
			e := u.deliver("alice@example.com", storage.Message{Subject: ptr("pic"), Body: ptr(imageEmail)})
			plain := u.deliver("alice@example.com", storage.Message{Subject: ptr("text"), Body: ptr("<p>no image</p>")})
			res := u.get("/email/" + e.ID + tc.query)
			wantPage(t, "GET /email/ID"+tc.query, res, http.StatusOK)
			if got := res.header.Get("Content-Security-Policy"); got != tc.csp {
				t.Errorf("GET /email/ID%s: CSP %q, want %q", tc.query, got, tc.csp)
			}
			link := `<a href="/email/` + e.ID + `?images=1">Load remote images</a>`
			if got := strings.Contains(res.body, link); got != tc.notice {
				t.Errorf("GET /email/ID%s: a link %s is there: %v, want %v\n%s", tc.query, link, got, tc.notice, res.body)
			}
			// A body without images has no notice, whatever the option.
			res = u.get("/email/" + plain.ID)
			wantPage(t, "GET /email/ID without images", res, http.StatusOK)
			if strings.Contains(res.body, "Load remote images") {
				t.Errorf("an email without images offers to load them:\n%s", res.body)
			}
			// The other pages show no email body, and load no remote image.
			if got := u.get("/inbox/alice").header.Get("Content-Security-Policy"); strings.Contains(got, "https:") {
				t.Errorf("the inbox page's CSP %q allows remote images", got)
			}
		})
	}
}

// TestSandboxDocumented: the email frame's sandbox is what README says.
func TestSandboxDocumented(t *testing.T) {
	const sandbox = `sandbox="allow-popups allow-popups-to-escape-sandbox"`
	for _, f := range []string{"templates/email.html", "../README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), sandbox) {
			t.Errorf("%s does not say %s", f, sandbox)
		}
	}
}

func TestUIEmailCut(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	cut := u.deliver("alice@example.com", storage.Message{Subject: ptr("long"), Body: ptr("<p>the start</p>" + storage.CutMark)})
	whole := u.deliver("alice@example.com", storage.Message{Subject: ptr("short"), Body: ptr("<p>all of it</p>")})
	res := u.get("/email/" + cut.ID)
	wantPage(t, "GET a cut email", res, http.StatusOK, "burner shows only its start",
		`<a href="/email/`+cut.ID+`/raw">source</a>`, `<a href="/email/`+cut.ID+`/download">download .eml</a>`)
	doc, err := xhtml.Parse(strings.NewReader(res.body))
	if err != nil {
		t.Fatal(err)
	}
	// The notice comes before the frame.
	if i, j := strings.Index(res.body, "burner shows only its start"), strings.Index(res.body, "<iframe"); i < 0 || j < i {
		t.Errorf("the notice (at %d) is not above the frame (at %d)", i, j)
	}
	if n := len(findElements(doc, "iframe")); n != 1 {
		t.Errorf("a cut email's page has %d iframes, want 1", n)
	}
	res = u.get("/email/" + whole.ID)
	wantPage(t, "GET a whole email", res, http.StatusOK, "all of it")
	if strings.Contains(res.body, "burner shows only its start") {
		t.Errorf("a whole email says it was cut:\n%s", res.body)
	}
}

func TestNonCanonicalPaths(t *testing.T) {
	u := newUI(t, Options{})
	for _, path := range []string{
		"//api/v1/emails?to=alice",
		"/./api/v1/emails?to=alice",
		"/api/v1/../v1/emails?to=alice",
		"/api/v1//emails?to=alice",
		"/api/v1/emails/.?to=alice",
		"//healthz",
		"/./healthz",
		"//metrics",
		"//inbox/alice",
		"/inbox/alice/..",
		"/static/../login",
	} {
		for _, key := range []bool{true, false} {
			auth := ""
			if key {
				auth = "Bearer " + u.key
			}
			for _, method := range []string{"GET", "DELETE"} {
				res := u.callAuth(method, path, auth)
				wantJSON(t, fmt.Sprintf("%s %s (key: %v)", method, path, key), res, http.StatusNotFound, notFoundBody)
				if loc := res.header.Get("Location"); loc != "" {
					t.Errorf("%s %s: Location %q, want none", method, path, loc)
				}
			}
		}
	}
	// The canonical paths still answer.
	wantJSON(t, "GET /api/v1/emails?to=alice", u.call("GET", "/api/v1/emails?to=alice"), http.StatusOK, `[]`)
	wantJSON(t, "GET /healthz", u.callAuth("GET", "/healthz", ""), http.StatusOK, `{"status":"ok"}`)
}

func TestLimitAndWaitDigitsOnly(t *testing.T) {
	a := newAPI(t)
	const (
		limit = `{"error":"'limit' must be an integer from 1 to 10."}`
		wait  = `{"error":"'wait' must be an integer from 1 to 60."}`
	)
	for _, tc := range []struct{ query, body string }{
		{"limit=%2B5", limit},
		{"limit=+5", limit},
		{"limit=-0", limit},
		{"limit=%205", limit},
		{"limit=5%20", limit},
		{"limit=%EF%BC%95", limit}, // a full-width 5
		{"limit=0x5", limit},
		{"limit=5_0", limit},
		{"wait=%2B5", wait},
		{"wait=+5", wait},
		{"wait=-5", wait},
		{"wait=%205", wait},
		{"wait=1.0", wait},
		{"wait=99999999999999999999", wait},
		{"limit=05", `[]`},
		{"limit=5", `[]`},
	} {
		status := http.StatusBadRequest
		if tc.body == `[]` {
			status = http.StatusOK
		}
		path := "/api/v1/emails?to=alice&" + tc.query
		wantJSON(t, "GET "+path, a.call("GET", path), status, tc.body)
	}
}

// queryLog wraps a Server's list to record the queries it is given.
type queryLog struct {
	mu      sync.Mutex
	queries []storage.Query
	changed chan struct{} // receives after each query, without blocking
}

func (l *queryLog) wrap(list func(context.Context, storage.Query) ([]storage.Email, error)) func(context.Context, storage.Query) ([]storage.Email, error) {
	return func(ctx context.Context, q storage.Query) ([]storage.Email, error) {
		l.mu.Lock()
		l.queries = append(l.queries, q)
		l.mu.Unlock()
		select {
		case l.changed <- struct{}{}:
		default:
		}
		return list(ctx, q)
	}
}

func (l *queryLog) snapshot() []storage.Query {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]storage.Query(nil), l.queries...)
}

// waitFor waits until the log holds a query for which ok is true.
func (l *queryLog) waitFor(t *testing.T, what string, ok func(storage.Query) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, q := range l.snapshot() {
			if ok(q) {
				return
			}
		}
		select {
		case <-l.changed:
		case <-deadline:
			t.Fatalf("no %s within 10s; queries: %+v", what, l.snapshot())
		}
	}
}

// newLoggedServer is the real handler over a's data file, its list
// wrapped by a queryLog.
func newLoggedServer(t *testing.T, a *apiTest) (*httptest.Server, *queryLog) {
	log := &queryLog{changed: make(chan struct{}, 1)}
	s := New(a.db, Options{UI: true, Public: true}, testLogger(t))
	s.list = log.wrap(s.list)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, log
}

// TestWaitReadsOnlyNewEmails: a waiter on an inbox of many emails that do
// not match runs its query once; each delivery then costs it a look at
// the emails that arrived after the newest it had seen, and the matching
// one answers it.
func TestWaitReadsOnlyNewEmails(t *testing.T) {
	a := newAPI(t)
	var old storage.Email
	for i := range 40 {
		old = a.deliver("crowd@example.com", storage.Message{Subject: ptr(fmt.Sprint("news ", i)), Body: ptr(strings.Repeat("<p>long</p>", 1000))})
	}
	srv, log := newLoggedServer(t, a)
	got := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/emails?to=crowd&subject=code&wait=30", nil)
		req.Header.Set("Authorization", "Bearer "+a.key)
		got <- send(t, srv.Client(), req)
	}()
	isFull := func(q storage.Query) bool { return q.Subject == "code" && q.AfterID == "" }
	log.waitFor(t, "full query", isFull)
	noise := a.deliver("crowd@example.com", storage.Message{Subject: ptr("more news")})
	log.waitFor(t, "look after "+old.ID, func(q storage.Query) bool { return q.Subject == "code" && q.AfterID == old.ID })
	match := a.deliver("crowd@example.com", storage.Message{Subject: ptr("your code")})
	var res response
	select {
	case res = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("wait=30 did not answer within 20s of a matching delivery")
	}
	wantJSON(t, "the waiter's answer", res, http.StatusOK, "["+string(mustEmailJSON(t, a, match.ID))+"]")

	full, after := 0, []string{}
	for _, q := range log.snapshot() {
		switch {
		case q.Subject != "code":
			if q.Limit != 1 || !q.NoBody || q.AfterID != "" {
				t.Errorf("a cursor query %+v, want Limit 1, NoBody, no filter", q)
			}
		case isFull(q):
			full++
		default:
			after = append(after, q.AfterID)
		}
	}
	if full != 1 {
		t.Errorf("the waiter ran its whole query %d times, want once", full)
	}
	// Every look starts at a cursor: the newest email before the noise,
	// then the noise (unless the match came before the look at the noise).
	if len(after) == 0 || after[0] != old.ID {
		t.Errorf("the waiter looked after %q, want %q first", after, old.ID)
	}
	for _, id := range after {
		if id != old.ID && id != noise.ID {
			t.Errorf("the waiter looked after %q, want %q then %q", after, old.ID, noise.ID)
			break
		}
	}
}

// mustEmailJSON returns the API's JSON of the email with id.
func mustEmailJSON(t *testing.T, a *apiTest, id string) []byte {
	t.Helper()
	res := a.call("GET", "/api/v1/emails/"+id)
	if res.status != http.StatusOK {
		t.Fatalf("GET email %s: %d %s", id, res.status, res.body)
	}
	return []byte(strings.TrimSuffix(res.body, "\n"))
}

// TestWaitCursorDeleted: when the newest email a waiter has seen is
// deleted, the waiter goes on from its time, and misses nothing.
func TestWaitCursorDeleted(t *testing.T) {
	a := newAPI(t)
	a.deliver("gone@example.com", storage.Message{Subject: ptr("old")})
	cur := a.deliver("gone@example.com", storage.Message{Subject: ptr("newest")})
	srv, log := newLoggedServer(t, a)
	got := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/emails?to=gone&subject=code&wait=30", nil)
		req.Header.Set("Authorization", "Bearer "+a.key)
		got <- send(t, srv.Client(), req)
	}()
	log.waitFor(t, "full query", func(q storage.Query) bool { return q.Subject == "code" })
	if err := a.db.Delete(context.Background(), cur.ID); err != nil {
		t.Fatal(err)
	}
	match := a.deliver("gone@example.com", storage.Message{Subject: ptr("code 1234")})
	select {
	case res := <-got:
		wantJSON(t, "the waiter's answer", res, http.StatusOK, "["+string(mustEmailJSON(t, a, match.ID))+"]")
	case <-time.After(20 * time.Second):
		t.Fatal("wait=30 did not answer within 20s of a matching delivery")
	}
	fallback := false
	for _, q := range log.snapshot() {
		if q.Subject == "code" && q.AfterID == "" && q.Since.Equal(cur.ReceivedAt.Add(-time.Nanosecond)) {
			fallback = true
		}
	}
	if !fallback {
		t.Errorf("no look from the deleted cursor's time; queries: %+v", log.snapshot())
	}
}

// TestEventsCursorDeleted: a stream whose newest email is deleted still
// tells of the next one (it used to skip to the newest and lose it), and
// its looks read only what arrived, without bodies.
func TestEventsCursorDeleted(t *testing.T) {
	a := newAPI(t)
	cur := a.deliver("live@example.com", storage.Message{Subject: ptr("before")})
	srv, log := newLoggedServer(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/events?to=live", nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
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
	waitLine(": burner events for live") // the stream has its cursor
	if err := a.db.Delete(context.Background(), cur.ID); err != nil {
		t.Fatal(err)
	}
	next := a.deliver("live@example.com", storage.Message{Subject: ptr("after")})
	waitLine("id: " + next.ID)
	for _, q := range log.snapshot() {
		if q.Limit != 1 && q.AfterID == "" && q.Since.IsZero() {
			t.Errorf("the stream read its whole inbox: %+v", q)
		}
		if !q.NoBody {
			t.Errorf("the stream listed bodies: %+v", q)
		}
	}
}

// TestUIInboxReadsNoBodies: the inbox page lists without bodies, and
// still shows every email.
func TestUIInboxReadsNoBodies(t *testing.T) {
	a := newAPI(t)
	e := a.deliver("alice@example.com", storage.Message{From: "eve@sender.test", Subject: ptr("Welcome"), Body: ptr("<p>body text</p>")})
	srv, log := newLoggedServer(t, a)
	req, _ := http.NewRequest("GET", srv.URL+"/inbox/alice", nil)
	res := send(t, srv.Client(), req)
	wantPage(t, "GET /inbox/alice", res, http.StatusOK, "Welcome", "eve@sender.test", `href="/email/`+e.ID+`"`)
	qs := log.snapshot()
	if len(qs) != 1 || !qs[0].NoBody {
		t.Errorf("the inbox page listed %+v, want one query with NoBody", qs)
	}
}
