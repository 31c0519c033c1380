package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/boltdb"
)

func TestHealthz(t *testing.T) {
	a := newAPI(t)
	wantJSON(t, "GET /healthz", a.callAuth("GET", "/healthz", ""), http.StatusOK, `{"status":"ok"}`)
	res := a.callAuth("HEAD", "/healthz", "")
	if res.status != http.StatusOK || res.body != "" {
		t.Errorf("HEAD /healthz: %d %q, want 200 and no body", res.status, res.body)
	}
	res = a.callAuth("POST", "/healthz", "")
	wantJSON(t, "POST /healthz", res, http.StatusMethodNotAllowed, notAllowedBody)
	if got := res.header.Get("Allow"); got != "GET, HEAD" {
		t.Errorf("POST /healthz: Allow %q, want %q", got, "GET, HEAD")
	}
}

// TestHealthzFull: /healthz is 503 while delivery refuses mail for want of
// room (retention.max_bytes), and 200 again once room is made.
func TestHealthzFull(t *testing.T) {
	c := newClock()
	db := openDBWith(t, boltdb.Options{Now: c.Now, Retention: storage.Retention{MaxBytes: 256 << 10}})
	srv := httptest.NewServer(New(db, Options{Now: c.Now}, testLogger(t)).Handler())
	t.Cleanup(srv.Close)
	health := func(what string, status int, body string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/healthz", nil)
		wantJSON(t, what, send(t, srv.Client(), req), status, body)
	}
	health("GET /healthz on a new file", http.StatusOK, `{"status":"ok"}`)

	// Random text, which compression does not shrink much; 4 KiB, the
	// small message that the health check asks room for.
	noise := make([]byte, 3<<10)
	rand.Read(noise)
	msg := storage.Message{Raw: []byte(base64.StdEncoding.EncodeToString(noise)[:4<<10])}
	var err error
	for range 1000 { // bounded: the cap is reached after about 60
		if _, err = db.Deliver(context.Background(), &msg, []string{"fill@example.com"}); err != nil {
			break
		}
	}
	if !errors.Is(err, storage.ErrFull) {
		t.Fatalf("Deliver under a 256 KiB cap: %v, want ErrFull", err)
	}
	health("GET /healthz within a second of the last check", http.StatusOK, `{"status":"ok"}`)
	c.Advance(2 * time.Second)
	health("GET /healthz while delivery gets ErrFull", http.StatusServiceUnavailable, `{"status":"unavailable"}`)

	if _, err := db.Clear(context.Background(), "fill"); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Second)
	health("GET /healthz once the inbox is cleared", http.StatusOK, `{"status":"ok"}`)
	if _, err := db.Deliver(context.Background(), &msg, []string{"fill@example.com"}); err != nil {
		t.Errorf("Deliver once healthz says ok: %v", err)
	}
}
