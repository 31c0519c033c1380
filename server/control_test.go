package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"burner/storage"
)

// controlTest is the real control handler over a real data file with a fake
// clock.
type controlTest struct {
	t     *testing.T
	db    *storage.DB
	clock *clock
	srv   *httptest.Server
}

func newControl(t *testing.T) *controlTest {
	t.Helper()
	c := newClock()
	db := openDBWith(t, storage.Options{Now: c.Now})
	srv := httptest.NewServer(New(db, Options{}, testLogger(t)).ControlHandler())
	t.Cleanup(srv.Close)
	return &controlTest{t: t, db: db, clock: c, srv: srv}
}

func (c *controlTest) call(method, path, body string) response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.srv.URL+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatalf("NewRequest(%s %s): %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(c.t, c.srv.Client(), req)
}

// create makes a key through the socket and returns the answer decoded.
func (c *controlTest) create(name string) ControlKey {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name})
	res := c.call("POST", "/keys", string(body))
	if res.status != http.StatusCreated {
		c.t.Fatalf("POST /keys %s: %d %s, want 201", body, res.status, res.body)
	}
	var k ControlKey
	if err := json.Unmarshal([]byte(res.body), &k); err != nil {
		c.t.Fatalf("POST /keys %s: %v in %s", body, err, res.body)
	}
	return k
}

func TestControlCreateKey(t *testing.T) {
	c := newControl(t)
	res := c.call("POST", "/keys", `{"name":" ci "}`)
	var k ControlKey
	if err := json.Unmarshal([]byte(res.body), &k); err != nil {
		t.Fatalf("POST /keys: %v in %s", err, res.body)
	}
	want := `{"id":"` + k.ID + `","name":"ci","created":"2025-03-14T15:09:26.535Z","lastUsed":null,"key":"` + k.Key + `"}`
	wantJSON(t, "POST /keys", res, http.StatusCreated, want)
	if k.ID == "" || !strings.HasPrefix(k.Key, storage.KeyPrefix) || len(k.Key) < len(storage.KeyPrefix)+43 {
		t.Errorf("POST /keys: id %q, key %q; want an id and a bnr_ key of 32 random bytes", k.ID, k.Key)
	}
	// The new key works at once.
	got, err := c.db.Authenticate(context.Background(), k.Key)
	if err != nil || got.ID != k.ID {
		t.Errorf("Authenticate(new key) = %v, %v; want key %s", got.ID, err, k.ID)
	}
}

func TestControlCreateKeyErrors(t *testing.T) {
	c := newControl(t)
	c.create("ci")
	for _, tc := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"taken name", `{"name":"ci"}`, 409, "A key with that name already exists."},
		{"taken name with spaces", `{"name":"  ci"}`, 409, "A key with that name already exists."},
		{"empty name", `{"name":""}`, 400, "'name' must be 1 to 64 printable characters."},
		{"blank name", `{"name":" \t "}`, 400, "'name' must be 1 to 64 printable characters."},
		{"no name", `{}`, 400, "'name' must be 1 to 64 printable characters."},
		{"null", `null`, 400, "'name' must be 1 to 64 printable characters."},
		{"long name", `{"name":"` + strings.Repeat("n", 65) + `"}`, 400, "'name' must be 1 to 64 printable characters."},
		{"control character", `{"name":"a\u0007b"}`, 400, "'name' must be 1 to 64 printable characters."},
		{"no body", ``, 400, "Invalid JSON body."},
		{"bad JSON", `{"name":`, 400, "Invalid JSON body."},
		{"not an object", `["ci"]`, 400, "Invalid JSON body."},
		{"name not a string", `{"name":5}`, 400, "Invalid JSON body."},
		{"unknown field", `{"name":"x","scope":"all"}`, 400, "Invalid JSON body."},
		{"trailing data", `{"name":"x"} {"name":"y"}`, 400, "Invalid JSON body."},
		{"too large", `{"name":"` + strings.Repeat("x", maxControlBody) + `"}`, 413, "Request body too large."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.call("POST", "/keys", tc.body)
			wantJSON(t, "POST /keys "+tc.name, res, tc.status, `{"error":"`+strings.ReplaceAll(tc.msg, `"`, `\"`)+`"}`)
		})
	}
	keys, err := c.db.Keys(context.Background())
	if err != nil || len(keys) != 1 {
		t.Errorf("Keys() after failed creations = %d keys, %v; want only ci", len(keys), err)
	}
}

func TestControlListKeys(t *testing.T) {
	c := newControl(t)
	wantJSON(t, "GET /keys with no keys", c.call("GET", "/keys", ""), http.StatusOK, `[]`)
	ci := c.create("ci")
	c.clock.Advance(time.Minute)
	laptop := c.create("laptop")
	want := `[{"id":"` + ci.ID + `","name":"ci","created":"2025-03-14T15:09:26.535Z","lastUsed":null},` +
		`{"id":"` + laptop.ID + `","name":"laptop","created":"2025-03-14T15:10:26.535Z","lastUsed":null}]`
	res := c.call("GET", "/keys", "")
	wantJSON(t, "GET /keys", res, http.StatusOK, want)
	if strings.Contains(res.body, storage.KeyPrefix) {
		t.Errorf("GET /keys shows a secret: %s", res.body)
	}

	c.clock.Advance(time.Hour)
	if _, err := c.db.Authenticate(context.Background(), laptop.Key); err != nil {
		t.Fatal(err)
	}
	want = `[{"id":"` + ci.ID + `","name":"ci","created":"2025-03-14T15:09:26.535Z","lastUsed":null},` +
		`{"id":"` + laptop.ID + `","name":"laptop","created":"2025-03-14T15:10:26.535Z","lastUsed":"2025-03-14T16:10:26.535Z"}]`
	wantJSON(t, "GET /keys after a use", c.call("GET", "/keys", ""), http.StatusOK, want)
}

func TestControlRevokeKey(t *testing.T) {
	c := newControl(t)
	byID := c.create("ci")
	byName := c.create("the/odd name")
	kept := c.create("kept")

	want := `{"id":"` + byID.ID + `","name":"ci","created":"2025-03-14T15:09:26.535Z","lastUsed":null}`
	wantJSON(t, "DELETE /keys/<id>", c.call("DELETE", "/keys/"+byID.ID, ""), http.StatusOK, want)
	// The CLI escapes a name into one path segment.
	want = `{"id":"` + byName.ID + `","name":"the/odd name","created":"2025-03-14T15:09:26.535Z","lastUsed":null}`
	wantJSON(t, "DELETE /keys/<name>", c.call("DELETE", "/keys/"+url.PathEscape("the/odd name"), ""), http.StatusOK, want)

	for _, k := range []ControlKey{byID, byName} {
		if _, err := c.db.Authenticate(context.Background(), k.Key); err == nil {
			t.Errorf("Authenticate(%s) after revoking succeeded, want a failure", k.Name)
		}
	}
	if _, err := c.db.Authenticate(context.Background(), kept.Key); err != nil {
		t.Errorf("Authenticate(kept) = %v, want success", err)
	}
	for _, idOrName := range []string{byID.ID, "ci", "nope"} {
		wantJSON(t, "DELETE /keys/"+idOrName, c.call("DELETE", "/keys/"+idOrName, ""), http.StatusNotFound, `{"error":"No such key."}`)
	}
}

func TestControlRoutes(t *testing.T) {
	c := newControl(t)
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/keys", "GET, HEAD, POST"},
		{"DELETE", "/keys", "GET, HEAD, POST"},
		{"GET", "/keys/ci", "DELETE"},
		{"POST", "/keys/ci", "DELETE"},
	} {
		what := tc.method + " " + tc.path
		res := c.call(tc.method, tc.path, "")
		wantJSON(t, what, res, http.StatusMethodNotAllowed, notAllowedBody)
		if got := res.header.Get("Allow"); got != tc.allow {
			t.Errorf("%s: Allow %q, want %q", what, got, tc.allow)
		}
	}
	for _, path := range []string{"/", "/keys/", "/keys/a/b", "/api/v1/emails?to=alice", "/healthz"} {
		wantJSON(t, "GET "+path, c.call("GET", path, ""), http.StatusNotFound, notFoundBody)
	}
}

// The revoked key's answer shows its last use, even one not yet written to
// the file.
func TestControlRevokeKeyLastUsed(t *testing.T) {
	c := newControl(t)
	k := c.create("ci")
	c.clock.Advance(time.Second)
	if _, err := c.db.Authenticate(context.Background(), k.Key); err != nil {
		t.Fatal(err)
	}
	res := c.call("DELETE", "/keys/ci", "")
	want := `{"id":"` + k.ID + `","name":"ci","created":"2025-03-14T15:09:26.535Z","lastUsed":"2025-03-14T15:09:27.535Z"}`
	wantJSON(t, "DELETE /keys/ci after a use", res, http.StatusOK, want)
}
