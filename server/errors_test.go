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
	"testing"

	"burner/storage"
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
		{"internal", errors.New("disk on fire"), 500, `{"error":"Internal error."}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
			w := httptest.NewRecorder()
			s.fail(w, httptest.NewRequest("GET", "/api/v1/emails?to=alice", nil), tc.err)
			wantJSON(t, "fail", response{w.Code, w.Header(), w.Body.String()}, tc.status, tc.body)
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
