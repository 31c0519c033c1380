package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
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

// controlTest is the real control handler on a real unix socket over a
// real data file with a fake clock, and the CLI's client of it.
type controlTest struct {
	t      *testing.T
	db     *boltdb.DB
	clock  *storetest.Clock
	client *ControlClient
	raw    *http.Client // for requests the client would never send
}

func newControl(t *testing.T) *controlTest {
	t.Helper()
	c := newClock()
	db := openDBWith(t, boltdb.Options{Now: c.Now})
	sock := filepath.Join(t.TempDir(), "burner.db.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: New(db, Options{}, testLogger(t)).ControlHandler()}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	client, err := DialControl(sock)
	if err != nil {
		t.Fatalf("DialControl(%s): %v", sock, err)
	}
	raw := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	return &controlTest{t: t, db: db, clock: c, client: client, raw: raw}
}

// call sends a request of its own making to the socket.
func (c *controlTest) call(method, path, body string) response {
	c.t.Helper()
	req, err := http.NewRequest(method, "http://burner"+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatalf("NewRequest(%s %s): %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(c.t, c.raw, req)
}

// create makes a key through the client and returns it with its secret.
func (c *controlTest) create(name string) (storage.Key, string) {
	c.t.Helper()
	k, secret, err := c.client.CreateKey(context.Background(), name, storage.Scope{})
	if err != nil {
		c.t.Fatalf("CreateKey(%q): %v", name, err)
	}
	return k, secret
}

// sameKey reports whether two keys are alike, times compared as instants.
func sameKey(a, b storage.Key) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Created.Equal(b.Created) && a.LastUsed.Equal(b.LastUsed)
}

func TestDialControlNoServer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	if c, err := DialControl(sock); err == nil {
		t.Errorf("DialControl(%s) with no server = %v, nil; want an error", sock, c)
	}
}

func TestControlCreateKey(t *testing.T) {
	c := newControl(t)
	k, secret := c.create(" ci ")
	want := storage.Key{ID: k.ID, Name: "ci", Created: c.clock.Now()}
	if k.ID == "" || !sameKey(k, want) {
		t.Errorf("CreateKey(\" ci \") = %+v, want %+v", k, want)
	}
	if !strings.HasPrefix(secret, storage.KeyPrefix) || len(secret) < len(storage.KeyPrefix)+43 {
		t.Errorf("CreateKey: secret %q; want a bnr_ key of 32 random bytes", secret)
	}
	// The new key works at once.
	got, err := c.db.Authenticate(context.Background(), secret)
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
	// The client gives back storage's errors, with the server's message.
	for _, tc := range []struct {
		name string
		want error
		msg  string
	}{
		{" ci", storage.ErrKeyExists, "A key with that name already exists."},
		{"", storage.ErrBadKeyName, "'name' must be 1 to 64 printable characters."},
	} {
		_, _, err := c.client.CreateKey(context.Background(), tc.name, storage.Scope{})
		if !errors.Is(err, tc.want) || err.Error() != tc.msg {
			t.Errorf("CreateKey(%q) = %v; want %q, wrapping %v", tc.name, err, tc.msg, tc.want)
		}
	}
	keys, err := c.db.Keys(context.Background())
	if err != nil || len(keys) != 1 {
		t.Errorf("Keys() after failed creations = %d keys, %v; want only ci", len(keys), err)
	}
}

func TestControlListKeys(t *testing.T) {
	c := newControl(t)
	ctx := context.Background()
	if got, err := c.client.Keys(ctx); err != nil || len(got) != 0 {
		t.Errorf("Keys() with no keys = %v, %v; want none", got, err)
	}
	ci, _ := c.create("ci")
	c.clock.Advance(time.Minute)
	laptop, secret := c.create("laptop")
	c.clock.Advance(time.Hour)
	if _, err := c.db.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	laptop.LastUsed = c.clock.Now() // in memory, not yet in the file
	got, err := c.client.Keys(ctx)
	if err != nil || len(got) != 2 || !sameKey(got[0], ci) || !sameKey(got[1], laptop) {
		t.Errorf("Keys() = %+v, %v; want %+v and %+v", got, err, ci, laptop)
	}
	if res := c.call("GET", "/keys", ""); res.status != http.StatusOK || strings.Contains(res.body, storage.KeyPrefix) {
		t.Errorf("GET /keys = %d %s; want 200 and no secret", res.status, res.body)
	}
}

func TestControlRevokeKey(t *testing.T) {
	c := newControl(t)
	ctx := context.Background()
	byID, byIDSecret := c.create("ci")
	byName, byNameSecret := c.create("the/odd name") // the client escapes it into one path segment
	_, keptSecret := c.create("kept")

	for idOrName, want := range map[string]storage.Key{byID.ID: byID, "the/odd name": byName} {
		if got, err := c.client.RevokeKey(ctx, idOrName); err != nil || !sameKey(got, want) {
			t.Errorf("RevokeKey(%q) = %+v, %v; want %+v", idOrName, got, err, want)
		}
	}
	for _, secret := range []string{byIDSecret, byNameSecret} {
		if _, err := c.db.Authenticate(ctx, secret); err == nil {
			t.Errorf("Authenticate(%s…) after revoking succeeded, want a failure", secret[:8])
		}
	}
	if _, err := c.db.Authenticate(ctx, keptSecret); err != nil {
		t.Errorf("Authenticate(kept) = %v, want success", err)
	}
	for _, idOrName := range []string{byID.ID, "ci", "nope"} {
		wantJSON(t, "DELETE /keys/"+idOrName, c.call("DELETE", "/keys/"+idOrName, ""), http.StatusNotFound, `{"error":"No such key."}`)
		if _, err := c.client.RevokeKey(ctx, idOrName); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("RevokeKey(%q) again = %v, want ErrNotFound", idOrName, err)
		}
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
	k, secret := c.create("ci")
	c.clock.Advance(time.Second)
	if _, err := c.db.Authenticate(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	got, err := c.client.RevokeKey(context.Background(), "ci")
	k.LastUsed = c.clock.Now()
	if err != nil || !sameKey(got, k) {
		t.Errorf("RevokeKey(ci) after a use = %+v, %v; want %+v", got, err, k)
	}
}

// TestControlKeyScope: the socket carries a key's scope both ways, and a
// bad pattern comes back as storage's error with nothing created.
func TestControlKeyScope(t *testing.T) {
	c := newControl(t)
	ctx := context.Background()
	k, _, err := c.client.CreateKey(ctx, "team", storage.Scope{Inboxes: []string{"Team-*", "alice"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(k.Scope.Inboxes, ",") != "team-*,alice" || !k.Scope.ReadOnly {
		t.Errorf("CreateKey's key has scope %+v; want team-*,alice read-only", k.Scope)
	}
	keys, err := c.client.Keys(ctx)
	if err != nil || len(keys) != 1 || strings.Join(keys[0].Scope.Inboxes, ",") != "team-*,alice" || !keys[0].Scope.ReadOnly {
		t.Errorf("Keys = %+v, %v; want team with its scope", keys, err)
	}
	stored, err := c.db.Key(ctx, k.ID)
	if err != nil || strings.Join(stored.Scope.Inboxes, ",") != "team-*,alice" || !stored.Scope.ReadOnly {
		t.Errorf("the stored key = %+v, %v; want its scope", stored, err)
	}
	if k, err := c.client.RevokeKey(ctx, "team"); err != nil || !k.Scope.ReadOnly {
		t.Errorf("RevokeKey = %+v, %v; want the key with its scope", k, err)
	}

	_, _, err = c.client.CreateKey(ctx, "bad", storage.Scope{Inboxes: []string{"ok", "a@b"}})
	if !errors.Is(err, storage.ErrBadInboxPattern) || !strings.Contains(err.Error(), `"a@b"`) {
		t.Errorf("CreateKey with a bad pattern = %v; want ErrBadInboxPattern naming it", err)
	}
	res := c.call("POST", "/keys", `{"name":"bad","scope":{"Inboxes":["*x"]}}`)
	if res.status != 400 || !strings.Contains(res.body, "inbox pattern") {
		t.Errorf("POST /keys with a bad pattern = %d %s; want 400 saying so", res.status, res.body)
	}
	if keys, err := c.db.Keys(ctx); err != nil || len(keys) != 0 {
		t.Errorf("Keys after refused patterns = %+v, %v; want none", keys, err)
	}
}

// TestControlMetricsKey: the control socket carries a key's metrics flag
// both ways, and answers a metrics scope with patterns 400 naming the
// rule, which the client maps back to storage.ErrMetricsScope.
func TestControlMetricsKey(t *testing.T) {
	c := newControl(t)
	ctx := context.Background()
	k, secret, err := c.client.CreateKey(ctx, "prom", storage.Scope{Metrics: true})
	if err != nil || !k.Scope.Metrics || !k.Scope.ReadOnly || secret == "" {
		t.Fatalf("CreateKey(prom, metrics) = %+v, %q, %v; want a metrics key", k, secret, err)
	}
	if keys, err := c.client.Keys(ctx); err != nil || len(keys) != 1 || !keys[0].Scope.Metrics {
		t.Errorf("Keys = %+v, %v; want prom, a metrics key", keys, err)
	}
	_, _, err = c.client.CreateKey(ctx, "bad", storage.Scope{Metrics: true, Inboxes: []string{"a"}})
	if !errors.Is(err, storage.ErrMetricsScope) {
		t.Errorf("CreateKey(metrics with a pattern) = %v; want ErrMetricsScope", err)
	}
	res := c.call("POST", "/keys", `{"name":"bad","scope":{"Inboxes":["a"],"Metrics":true}}`)
	if res.status != 400 || !strings.Contains(res.body, "a metrics key reaches no inbox") {
		t.Errorf("POST /keys with a metrics scope with patterns = %d %s; want 400 saying why", res.status, res.body)
	}
	if keys, err := c.db.Keys(ctx); err != nil || len(keys) != 1 {
		t.Errorf("Keys after the refused metrics scopes = %+v, %v; want prom alone", keys, err)
	}
}

// TestControlWaiting: the control socket's /webhooks answers what waits,
// for `burner stats`.
func TestControlWaiting(t *testing.T) {
	hook := storage.Hook{ID: "hooks.example.com-1a2b3c4d"}
	db := openDBWith(t, boltdb.Options{Hooks: []storage.Hook{hook}})
	if _, err := db.Deliver(context.Background(), &storage.Message{From: "s@x.test", Raw: []byte("Subject: x\r\n\r\nhi\r\n")},
		[]string{"a@x.test", "b@x.test"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(db, Options{}, nil).ControlHandler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/webhooks")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ws []storage.HookWaiting
	if err := json.NewDecoder(res.Body).Decode(&ws); err != nil || res.StatusCode != 200 || len(ws) != 1 || ws[0].Hook != hook.ID || ws[0].Events != 2 {
		t.Errorf("GET /webhooks = %d %+v (%v), want 2 events of %s", res.StatusCode, ws, err, hook.ID)
	}
}
