package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/storetest"
)

// openDB opens a fresh data file that the test closes when it ends.
func openDB(t testing.TB) *boltdb.DB {
	t.Helper()
	return openDBWith(t, boltdb.Options{})
}

func openDBWith(t testing.TB, opts boltdb.Options) *boltdb.DB {
	t.Helper()
	db, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), opts)
	if err != nil {
		t.Fatalf("boltdb.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// newClock returns a fake clock at a fixed time, moved only when told.
func newClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC))
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// apiTest is the real public handler over a real data file with a fake
// clock, and a valid API key.
type apiTest struct {
	t     testing.TB
	db    *boltdb.DB
	clock *storetest.Clock
	srv   *httptest.Server
	key   string
}

func newAPI(t testing.TB) *apiTest {
	t.Helper()
	return newAPILog(t, testLogger(t))
}

func newAPILog(t testing.TB, log *slog.Logger) *apiTest {
	t.Helper()
	a, _ := newAPIOptions(t, Options{}, log)
	return a
}

// newAPIOptions is newAPI with opts (its clock set to the fake one) and
// log; it also returns the Server, for tests that look inside.
func newAPIOptions(t testing.TB, opts Options, log *slog.Logger) (*apiTest, *Server) {
	t.Helper()
	c := newClock()
	db := openDBWith(t, boltdb.Options{Now: c.Now})
	_, key, err := db.CreateKey(context.Background(), "test", storage.Scope{})
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	opts.Now = c.Now
	s := New(db, opts, log)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &apiTest{t: t, db: db, clock: c, srv: srv, key: key}, s
}

// deliver stores m for to one second after the previous delivery, so that
// every email has its own known receivedAt.
func (a *apiTest) deliver(to string, m storage.Message) storage.Email {
	a.t.Helper()
	a.clock.Advance(time.Second)
	emails, err := a.db.Deliver(context.Background(), &m, []string{to})
	if err != nil {
		a.t.Fatalf("Deliver(%q): %v", to, err)
	}
	return emails[0]
}

type response struct {
	status int
	header http.Header
	body   string
}

// call sends an authorized request.
func (a *apiTest) call(method, path string) response {
	a.t.Helper()
	return a.callAuth(method, path, "Bearer "+a.key)
}

// callAuth sends a request with auth as its Authorization header (none
// when auth is "").
func (a *apiTest) callAuth(method, path, auth string) response {
	a.t.Helper()
	return a.callBody(method, path, auth, "")
}

// callBody sends a request with auth and body (as JSON, when not "").
func (a *apiTest) callBody(method, path, auth, body string) response {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatalf("NewRequest(%s %s): %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return send(a.t, a.srv.Client(), req)
}

func send(t testing.TB, c *http.Client, req *http.Request) response {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(body)}
}

// wantJSON checks the status, the JSON content type and the exact body
// (which writeJSON ends with a newline).
func wantJSON(t testing.TB, what string, res response, status int, body string) {
	t.Helper()
	if res.status != status {
		t.Errorf("%s: status %d, want %d (body %s)", what, res.status, status, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	if res.body != body+"\n" {
		t.Errorf("%s: body\n%s\nwant\n%s", what, strings.TrimSuffix(res.body, "\n"), body)
	}
}

// wantNoContent checks a 204: no body and no Content-Type.
func wantNoContent(t testing.TB, what string, res response) {
	t.Helper()
	if res.status != http.StatusNoContent {
		t.Errorf("%s: status %d, want 204 (body %s)", what, res.status, res.body)
	}
	if ct, ok := res.header["Content-Type"]; ok {
		t.Errorf("%s: Content-Type %q, want none", what, ct)
	}
	if res.body != "" {
		t.Errorf("%s: body %q, want none", what, res.body)
	}
}

const (
	unauthorizedBody = `{"error":"Missing or invalid API key."}`
	notFoundBody     = `{"error":"Not found."}`
	notAllowedBody   = `{"error":"Method not allowed."}`
)

func wantUnauthorized(t testing.TB, what string, res response) {
	t.Helper()
	wantJSON(t, what, res, http.StatusUnauthorized, unauthorizedBody)
	if got := res.header.Get("WWW-Authenticate"); got != "Bearer" {
		t.Errorf("%s: WWW-Authenticate %q, want Bearer", what, got)
	}
}

func TestAuth(t *testing.T) {
	a := newAPI(t)
	const path = "/api/v1/emails?to=alice"
	for _, tc := range []struct {
		name, auth string
		ok         bool
	}{
		{"missing header", "", false},
		{"basic scheme", "Basic dXNlcjpwYXNz", false},
		{"other scheme", "Token " + a.key, false},
		{"bearer without token", "Bearer", false},
		{"bearer with empty token", "Bearer ", false},
		{"two spaces", "Bearer  " + a.key, true}, // RFC 6750: 1*SP
		{"two tokens", "Bearer " + a.key + " " + a.key, false},
		{"tab", "Bearer\t" + a.key, false},
		{"key alone", a.key, false},
		{"unknown key", "Bearer bnr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", false},
		{"no prefix", "Bearer " + strings.TrimPrefix(a.key, storage.KeyPrefix), false},
		{"key with a byte more", "Bearer " + a.key + "x", false},
		{"valid", "Bearer " + a.key, true},
		{"lowercase scheme", "bearer " + a.key, true},
		{"uppercase scheme", "BEARER " + a.key, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := a.callAuth("GET", path, tc.auth)
			if tc.ok {
				wantJSON(t, "GET "+path, res, http.StatusOK, `[]`)
			} else {
				wantUnauthorized(t, "GET "+path, res)
			}
		})
	}
}

func TestAuthTwoHeaders(t *testing.T) {
	a := newAPI(t)
	req, err := http.NewRequest("GET", a.srv.URL+"/api/v1/emails?to=alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Authorization", "Bearer "+a.key)
	req.Header.Add("Authorization", "Bearer "+a.key)
	wantUnauthorized(t, "two Authorization headers", send(t, a.srv.Client(), req))
}

func TestRevokedKeyRefusedAtOnce(t *testing.T) {
	a := newAPI(t)
	k, key, err := a.db.CreateKey(context.Background(), "ci", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/emails?to=alice"
	wantJSON(t, "before revoking", a.callAuth("GET", path, "Bearer "+key), http.StatusOK, `[]`)
	if _, err := a.db.RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	wantUnauthorized(t, "after revoking", a.callAuth("GET", path, "Bearer "+key))
	wantJSON(t, "another key", a.call("GET", path), http.StatusOK, `[]`)
}

// spec §4: authentication is checked first, before routing and validation.
func TestAuthComesFirst(t *testing.T) {
	a := newAPI(t)
	for _, req := range []struct{ method, path string }{
		{"GET", "/api/v1/emails"},
		{"GET", "/api/v1/emails?to=bad@char"},
		{"GET", "/api/v1/emails?to=alice&subject=a&body=b"},
		{"GET", "/api/v1/emails/not-a-uuid"},
		{"DELETE", "/api/v1/emails/not-a-uuid"},
		{"DELETE", "/api/v1/inbox"},
		{"POST", "/api/v1/emails"},
		{"PUT", "/api/v1/emails/x"},
		{"GET", "/api/v1/nope"},
		{"GET", "/api/"},
		{"GET", "/api"},
	} {
		wantUnauthorized(t, req.method+" "+req.path, a.callAuth(req.method, req.path, ""))
	}
}

func TestNotFound(t *testing.T) {
	a := newAPI(t)
	for _, path := range []string{
		"/api/v1/nope",
		"/api/v2/emails",
		"/api/v1/emails/",
		"/api/v1/emails/x/y",
		"/api/v1/inbox/alice",
		"/api/",
		"/api",
	} {
		wantJSON(t, "GET "+path+" with a key", a.call("GET", path), http.StatusNotFound, notFoundBody)
	}
	for _, path := range []string{"/", "/index.html", "/apix", "/healthz/x"} {
		wantJSON(t, "GET "+path, a.callAuth("GET", path, ""), http.StatusNotFound, notFoundBody)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	a := newAPI(t)
	const id = "/api/v1/emails/0b0e3ab1-7b2e-4e51-9a4b-7d1c2f1e0a11"
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/api/v1/emails", "GET, HEAD"},
		{"DELETE", "/api/v1/emails?to=alice", "GET, HEAD"},
		{"PUT", id, "GET, HEAD, DELETE"},
		{"PATCH", id, "GET, HEAD, DELETE"},
		{"POST", "/api/v1/emails/not-a-uuid", "GET, HEAD, DELETE"},
		{"GET", "/api/v1/inbox?to=alice", "DELETE"},
		{"POST", "/api/v1/inbox?to=alice", "DELETE"},
	} {
		what := tc.method + " " + tc.path
		res := a.call(tc.method, tc.path)
		wantJSON(t, what, res, http.StatusMethodNotAllowed, notAllowedBody)
		if got := res.header.Get("Allow"); got != tc.allow {
			t.Errorf("%s: Allow %q, want %q", what, got, tc.allow)
		}
	}
}

func TestHead(t *testing.T) {
	a := newAPI(t)
	e := a.deliver("alice@example.com", storage.Message{From: "bob@example.com"})
	for _, path := range []string{"/api/v1/emails?to=alice", "/api/v1/emails/" + e.ID} {
		res := a.call("HEAD", path)
		if res.status != http.StatusOK || res.body != "" {
			t.Errorf("HEAD %s: %d %q, want 200 and no body", path, res.status, res.body)
		}
		if ct := res.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("HEAD %s: Content-Type %q, want application/json", path, ct)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	a := newAPI(t)
	e := a.deliver("alice@example.com", storage.Message{From: "bob@example.com"})
	for _, tc := range []struct {
		method, path string
		auth         bool
		status       int
	}{
		{"GET", "/api/v1/emails?to=alice", true, 200},
		{"GET", "/api/v1/emails/" + e.ID, true, 200},
		{"GET", "/api/v1/emails?to=alice", false, 401},
		{"GET", "/api/v1/emails", true, 400},
		{"GET", "/api/v1/nope", true, 404},
		{"POST", "/api/v1/emails", true, 405},
		{"DELETE", "/api/v1/inbox?to=alice", true, 204},
		{"GET", "/healthz", false, 200},
		{"GET", "/", false, 404},
	} {
		what := tc.method + " " + tc.path
		var res response
		if tc.auth {
			res = a.call(tc.method, tc.path)
		} else {
			res = a.callAuth(tc.method, tc.path, "")
		}
		if res.status != tc.status {
			t.Errorf("%s: status %d, want %d", what, res.status, tc.status)
		}
		for h, want := range map[string]string{
			"X-Content-Type-Options": "nosniff",
			"Referrer-Policy":        "no-referrer",
			"Cache-Control":          "no-store",
		} {
			if got := res.header.Get(h); got != want {
				t.Errorf("%s: %s %q, want %q", what, h, got, want)
			}
		}
	}
}

func TestRecoverPanics(t *testing.T) {
	var logs bytes.Buffer
	s := New(openDB(t), Options{}, slog.New(slog.NewTextHandler(&logs, nil)))
	mux := http.NewServeMux()
	mux.HandleFunc("/boom", func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	mux.HandleFunc("/half", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("[{"))
		w.(http.Flusher).Flush()
		panic("half")
	})
	mux.HandleFunc("/fine", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, "fine") })
	srv := httptest.NewServer(s.recoverPanics(mux))
	defer srv.Close()

	get := func(path string) response {
		req, err := http.NewRequest("GET", srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return send(t, srv.Client(), req)
	}
	wantJSON(t, "GET /boom", get("/boom"), http.StatusInternalServerError, `{"error":"Internal error."}`)
	if !strings.Contains(logs.String(), "panic serving request") || !strings.Contains(logs.String(), "panic=boom") {
		t.Errorf("log after a panic:\n%s\nwant the panic logged", logs.String())
	}
	// Once part of the answer is out, the connection is cut.
	if res, err := srv.Client().Get(srv.URL + "/half"); err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err == nil {
			t.Errorf("GET /half: read the whole body, want a broken connection")
		}
	}
	wantJSON(t, "GET /fine after the panics", get("/fine"), http.StatusOK, `"fine"`)
}

func TestRequestLog(t *testing.T) {
	var logs bytes.Buffer
	a := newAPILog(t, slog.New(slog.NewTextHandler(&logs, nil)))
	a.call("GET", "/api/v1/emails?to=alice&search=topsecret")
	a.callAuth("GET", "/api/v1/emails?to=alice", "Bearer bnr_wrongkey")
	a.callAuth("GET", "/healthz", "") // Debug: not at the default level
	got := logs.String()
	for _, want := range []string{
		"msg=request method=GET path=/api/v1/emails status=200 duration_ms=",
		"msg=request method=GET path=/api/v1/emails status=401 duration_ms=",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("request log:\n%s\nwant a line with %q", got, want)
		}
	}
	if n := strings.Count(got, "msg=request"); n != 2 {
		t.Errorf("request log has %d request lines, want 2 (health checks log at Debug):\n%s", n, got)
	}
	for _, secret := range []string{"topsecret", a.key, "bnr_wrongkey", "Bearer"} {
		if strings.Contains(got, secret) {
			t.Errorf("request log contains %q:\n%s", secret, got)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header string
		token  string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"bEaReR abc", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer   abc", "abc", true},
		{"Bearer   ", "", false},
		{"Bearer a b", "", false},
		{"Bearer a\tb", "", false},
		{" Bearer abc", "", false},
		{"Bearerabc", "", false},
		{"Basic abc", "", false},
	} {
		h := http.Header{"Authorization": {tc.header}}
		token, ok := bearerToken(h)
		if token != tc.token || ok != tc.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tc.header, token, ok, tc.token, tc.ok)
		}
	}
	if _, ok := bearerToken(http.Header{}); ok {
		t.Errorf("bearerToken(no header) succeeded, want failure")
	}
}

func TestQueryTooLong(t *testing.T) {
	a := newAPI(t)
	long := "/api/v1/emails?to=alice&search=" + strings.Repeat("x", 4<<10)
	wantJSON(t, "GET with a 4 KiB search", a.call("GET", long), http.StatusRequestURITooLong, `{"error":"Query string too long."}`)
	// Just under the cap is served.
	ok := "/api/v1/emails?to=alice&search=" + strings.Repeat("x", 4<<10-len("to=alice&search="))
	wantJSON(t, "GET with a query of exactly 4 KiB", a.call("GET", ok), http.StatusOK, `[]`)
}
