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

// TestSessions: UI sessions kept in the database (storage.Engine) are
// seen by every node: made on one, touched, ended and revoked on either.
// storetest's Sessions case covers one node.
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
	if err := a.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s, err := b.Session(ctx, h, now)
	if err != nil || s.KeyID != k.ID || !s.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("Session on B = %+v, %v; want key %s until %v", s, err, k.ID, now.Add(time.Hour))
	}
	// A later touch wins over an earlier one, whichever node makes it.
	if err := b.TouchSession(ctx, h, now.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.TouchSession(ctx, h, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s, err := a.Session(ctx, h, now); err != nil || !s.Expires.Equal(now.Add(3*time.Hour)) {
		t.Errorf("Session after touches to +3h on B then +2h on A = %+v, %v; want the end at +3h", s, err)
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
		t.Errorf("Session after its key was revoked on the other node: %v, want ErrNotFound", err)
	}
}
