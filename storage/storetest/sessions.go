package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/internal/record"
)

// testSessions: UI sessions kept by the store, ending at expiry, at
// logout and at the revocation of their key; a later touch wins over an
// earlier one.
func testSessions(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	k, _, err := db.CreateKey(ctx, "ui", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := storage.SessionHash(sha256.Sum256([]byte("token")))
	if err := db.CreateSession(ctx, storage.SessionHash{1}, "no-such-key", now.Add(time.Hour)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("CreateSession for a key that does not exist: %v, want ErrNotFound", err)
	}
	if _, err := db.Session(ctx, h, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session before CreateSession: %v, want ErrNotFound", err)
	}
	end := now.Add(time.Hour + 1500*time.Microsecond) // kept to the millisecond
	if err := db.CreateSession(ctx, h, k.ID, end); err != nil {
		t.Fatal(err)
	}
	s, err := db.Session(ctx, h, now)
	if err != nil || s.KeyID != k.ID || !s.Expires.Equal(record.Milli(end)) {
		t.Fatalf("Session = %+v, %v; want key %s until %v", s, err, k.ID, record.Milli(end))
	}
	if _, err := db.Session(ctx, h, record.Milli(end)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session at its end: %v, want ErrNotFound", err)
	}
	// A later touch wins over an earlier one, in either order.
	if err := db.TouchSession(ctx, h, now.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.TouchSession(ctx, h, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s, err := db.Session(ctx, h, now); err != nil || !s.Expires.Equal(now.Add(3*time.Hour)) {
		t.Errorf("Session after touches to +3h then +2h = %+v, %v; want the end at +3h", s, err)
	}
	if err := db.TouchSession(ctx, storage.SessionHash{2}, now.Add(time.Hour)); err != nil {
		t.Errorf("TouchSession of no session: %v, want nil", err)
	}
	if n, err := db.DeleteExpiredSessions(ctx, now.Add(2*time.Hour)); err != nil || n != 0 {
		t.Errorf("DeleteExpiredSessions before the end = %d, %v; want 0", n, err)
	}
	if n, err := db.DeleteExpiredSessions(ctx, now.Add(3*time.Hour)); err != nil || n != 1 {
		t.Errorf("DeleteExpiredSessions at the end = %d, %v; want 1", n, err)
	}
	if _, err := db.Session(ctx, h, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session after DeleteExpiredSessions: %v, want ErrNotFound", err)
	}

	if err := db.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Session(ctx, h, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session after DeleteSession: %v, want ErrNotFound", err)
	}
	if err := db.DeleteSession(ctx, h); err != nil {
		t.Errorf("DeleteSession of a session gone: %v, want nil", err)
	}

	if err := db.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RevokeKey(ctx, "ui"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Session(ctx, h, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session after its key was revoked: %v, want ErrNotFound", err)
	}
}

// testCopyLeavesSessions: a copy carries the keys but not the UI sessions
// made with them (spec §10: UI sessions are not copied), so a session
// cookie of the source is no login on the copy, though its key is there
// with the same id.
func testCopyLeavesSessions(t *testing.T, open Opener) {
	ctx := context.Background()
	src, dst, cfg, _ := copyStores(t, open)
	k := keyNamed(t, src, "ci")
	h := storage.SessionHash(sha256.Sum256([]byte("copied?")))
	now := cfg.Now()
	if err := src.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Import(ctx, src, nil); err != nil {
		t.Fatalf("Import: %v", err)
	}
	if got := keyNamed(t, dst, "ci"); got.ID != k.ID {
		t.Fatalf("the copy's key ci has id %s, the source's %s", got.ID, k.ID)
	}
	if s, err := dst.Session(ctx, h, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session on the copy = %+v, %v; want ErrNotFound", s, err)
	}
	if _, err := src.Session(ctx, h, now); err != nil {
		t.Errorf("Session on the source after the copy: %v, want it still there", err)
	}
}
