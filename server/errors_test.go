package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/boltdb"
)

func TestFail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		body   string
		logged bool
	}{
		{"bad request", fmt.Errorf("parse: %w", badRequest("'to' is required.")), 400, `{"error":"'to' is required."}`, false},
		{"body too large", fmt.Errorf("decode: %w", &http.MaxBytesError{Limit: 4096}), 413, `{"error":"Request body too large."}`, false},
		{"not found", fmt.Errorf("email x: %w", storage.ErrNotFound), 404, `{"error":"Email not found"}`, false},
		{"key exists", fmt.Errorf("create key: %w", storage.ErrKeyExists), 409, `{"error":"A key with that name already exists."}`, false},
		{"unavailable", fmt.Errorf("list: %w", storage.ErrUnavailable), 503, `{"error":"Storage unavailable."}`, false},
		{"internal", errors.New("disk on fire"), 500, `{"error":"Internal error."}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
			w := httptest.NewRecorder()
			s.fail(w, httptest.NewRequest("GET", "/api/v1/emails?to=alice", nil), tc.err)
			wantJSON(t, "fail", response{w.Code, w.Header(), w.Body.String()}, tc.status, tc.body)
			if got, want := w.Header().Get("Retry-After"), map[bool]string{true: "5"}[tc.status == 503]; got != want {
				t.Errorf("fail(%v): Retry-After %q, want %q", tc.err, got, want)
			}
			if logged := strings.Contains(logs.String(), "level=ERROR"); logged != tc.logged {
				t.Errorf("fail(%v) logged an error: %v, want %v:\n%s", tc.err, logged, tc.logged, logs.String())
			}
			if tc.logged && !strings.Contains(logs.String(), tc.err.Error()) {
				t.Errorf("log %q lacks the error %q", logs.String(), tc.err)
			}
		})
	}
}

// A client that went away is not our fault: 500 for the record, no error log.
func TestFailCanceled(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequestWithContext(ctx, "DELETE", "/api/v1/inbox?to=alice", nil)
	w := httptest.NewRecorder()
	s.fail(w, r, fmt.Errorf("clear alice: %w", context.Canceled))
	wantJSON(t, "fail(canceled)", response{w.Code, w.Header(), w.Body.String()}, 500, `{"error":"Internal error."}`)
	if logs.Len() != 0 {
		t.Errorf("fail(canceled) logged at Info or above:\n%s", logs.String())
	}
}

func TestWriteJSON(t *testing.T) {
	w := httptest.NewRecorder()
	writeJSON(w, http.StatusTeapot, map[string]string{"body": `<p class="x">a & b</p>`})
	// HTML is not escaped to \u003c: the bodies are HTML and should read as such.
	wantJSON(t, "writeJSON", response{w.Code, w.Header(), w.Body.String()}, http.StatusTeapot, `{"body":"<p class=\"x\">a & b</p>"}`)
	if got, want := w.Header().Get("Content-Length"), fmt.Sprint(w.Body.Len()); got != want {
		t.Errorf("Content-Length %s, want %s", got, want)
	}
}

// A value that cannot be encoded is a programming error: it panics into
// recoverPanics, which logs it and answers 500.
func TestWriteJSONUnencodable(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	h := s.recoverPanics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, func() {})
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	body, _ := io.ReadAll(w.Result().Body)
	wantJSON(t, "writeJSON(func)", response{w.Code, w.Header(), string(body)}, 500, `{"error":"Internal error."}`)
	if !strings.Contains(logs.String(), "writeJSON func()") {
		t.Errorf("log %q lacks the encoding failure", logs.String())
	}
}

func TestMethodNotAllowedHandler(t *testing.T) {
	w := httptest.NewRecorder()
	methodNotAllowed("DELETE")(w, httptest.NewRequest("GET", "/api/v1/inbox", nil))
	wantJSON(t, "methodNotAllowed", response{w.Code, w.Header(), w.Body.String()}, 405, notAllowedBody)
	if got := w.Header().Get("Allow"); got != "DELETE" {
		t.Errorf("Allow %q, want DELETE", got)
	}
}

func TestNotFoundHandler(t *testing.T) {
	w := httptest.NewRecorder()
	notFound(w, httptest.NewRequest("GET", "/nope", nil))
	wantJSON(t, "notFound", response{w.Code, w.Header(), w.Body.String()}, 404, notFoundBody)
}

// outage is a real data file that can be cut off: while down is set,
// every call the test makes fails as an engine fails when its database
// cannot be reached. A wrapper, not a real outage, because the real one
// (PostgreSQL stopped under load) is the engine's own test
// (storage/postgres/outage_test.go); what is checked here is the one
// mapping every engine shares.
type outage struct {
	storage.Engine
	down atomic.Bool
}

func (o *outage) err(what string) error {
	if o.down.Load() {
		return fmt.Errorf("%s: dial tcp 10.0.0.5:5432: connect: no route to host: %w", what, storage.ErrUnavailable)
	}
	return nil
}

func (o *outage) Authenticate(ctx context.Context, secret string) (storage.Key, error) {
	if err := o.err("authenticate"); err != nil {
		return storage.Key{}, err
	}
	return o.Engine.Authenticate(ctx, secret)
}

func (o *outage) List(ctx context.Context, q storage.Query) ([]storage.Email, error) {
	if err := o.err("list"); err != nil {
		return nil, err
	}
	return o.Engine.List(ctx, q)
}

func (o *outage) Email(ctx context.Context, id string) (storage.Email, error) {
	if err := o.err("email " + id); err != nil {
		return storage.Email{}, err
	}
	return o.Engine.Email(ctx, id)
}

func (o *outage) CheckWritable(ctx context.Context) error {
	if err := o.err("check writable"); err != nil {
		return err
	}
	return o.Engine.CheckWritable(ctx)
}

// spec §10: a store that cannot be reached gives the API 503 "Storage
// unavailable." with Retry-After: 5, the web UI a 503 page, /healthz 503;
// and all answer again once it is back.
func TestStorageUnavailable(t *testing.T) {
	c := newClock()
	db := &outage{Engine: openDBWith(t, boltdb.Options{Now: c.Now})}
	_, key, err := db.CreateKey(context.Background(), "test", storage.Scope{})
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	var logs bytes.Buffer
	s := New(db, Options{UI: true, Public: true, Now: c.Now}, slog.New(slog.NewTextHandler(&logs, nil)))
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	a := &apiTest{t: t, clock: c, srv: srv, key: key}
	msg := storage.Message{From: "a@example.com", Subject: new("hello"), Raw: []byte("Subject: hello\r\n\r\nhi\r\n")}
	emails, err := db.Deliver(context.Background(), &msg, []string{"alice@example.com"})
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	id := emails[0].ID

	db.down.Store(true)
	for _, path := range []string{"/api/v1/emails?to=alice", "/api/v1/emails/" + id} {
		res := a.call("GET", path)
		wantJSON(t, "GET "+path+" while the store is down", res, 503, `{"error":"Storage unavailable."}`)
		if got := res.header.Get("Retry-After"); got != "5" {
			t.Errorf("GET %s while the store is down: Retry-After %q, want 5", path, got)
		}
	}
	res := a.callAuth("GET", "/healthz", "")
	wantJSON(t, "GET /healthz while the store is down", res, 503, `{"status":"unavailable"}`)
	res = a.callAuth("GET", "/inbox/alice", "")
	if res.status != 503 || !strings.HasPrefix(res.header.Get("Content-Type"), "text/html") ||
		res.header.Get("Retry-After") != "5" || !strings.Contains(res.body, "Storage unavailable.") {
		t.Errorf("UI GET /inbox/alice while the store is down: %d %q Retry-After %q, want a 503 HTML page saying Storage unavailable, Retry-After 5:\n%s",
			res.status, res.header.Get("Content-Type"), res.header.Get("Retry-After"), res.body)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("an outage was logged as our own fault (ERROR):\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "storage unavailable") {
		t.Errorf("the outage was not logged:\n%s", logs.String())
	}

	db.down.Store(false)
	c.Advance(2 * time.Second) // past /healthz's cache
	if res := a.call("GET", "/api/v1/emails/"+id); res.status != 200 || res.header.Get("Retry-After") != "" {
		t.Errorf("GET /api/v1/emails/%s once the store is back: %d (Retry-After %q), want 200 without Retry-After: %s", id, res.status, res.header.Get("Retry-After"), res.body)
	}
	wantJSON(t, "GET /healthz once the store is back", a.callAuth("GET", "/healthz", ""), 200, `{"status":"ok"}`)
	if res := a.callAuth("GET", "/inbox/alice", ""); res.status != 200 {
		t.Errorf("UI GET /inbox/alice once the store is back: %d, want 200", res.status)
	}
}
