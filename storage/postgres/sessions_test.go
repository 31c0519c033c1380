package postgres_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/postgres"
)

// TestSessions: UI sessions kept in the database (storage.Sessions), seen
// by every node, ending at expiry, logout and revocation of their key.
func TestSessions(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	a := openDB(t, dbURL, postgres.Options{})
	b := openDB(t, dbURL, postgres.Options{})
	k, _, err := a.CreateKey(ctx, "ui", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := storage.SessionHash(sha256.Sum256([]byte("token")))
	if err := a.CreateSession(ctx, storage.SessionHash{1}, "no-such-key", now.Add(time.Hour)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("CreateSession for a key that does not exist: %v, want ErrNotFound", err)
	}
	if err := a.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s, err := b.Session(ctx, h, now)
	if err != nil || s.KeyID != k.ID || !s.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("Session on B = %+v, %v; want key %s until %v", s, err, k.ID, now.Add(time.Hour))
	}
	if _, err := b.Session(ctx, h, now.Add(time.Hour)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session at its end: %v, want ErrNotFound", err)
	}
	// A later touch wins over an earlier one, in either order.
	if err := b.TouchSession(ctx, h, now.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.TouchSession(ctx, h, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s, err := a.Session(ctx, h, now); err != nil || !s.Expires.Equal(now.Add(3*time.Hour)) {
		t.Errorf("Session after touches to +3h then +2h = %+v, %v; want the end at +3h", s, err)
	}
	if n, err := a.DeleteExpiredSessions(ctx, now.Add(2*time.Hour)); err != nil || n != 0 {
		t.Errorf("DeleteExpiredSessions before the end = %d, %v; want 0", n, err)
	}
	if n, err := a.DeleteExpiredSessions(ctx, now.Add(3*time.Hour)); err != nil || n != 1 {
		t.Errorf("DeleteExpiredSessions at the end = %d, %v; want 1", n, err)
	}

	if err := a.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Session(ctx, h, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session after DeleteSession on the other node: %v, want ErrNotFound", err)
	}
	if err := a.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RevokeKey(ctx, "ui"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Session(ctx, h, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session after its key was revoked: %v, want ErrNotFound", err)
	}
}
