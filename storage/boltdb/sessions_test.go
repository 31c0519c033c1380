package boltdb

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// TestSessionsSurviveReopen: a session is in the file, so it outlives a
// Close and Open (a restart of serve), and a backup holds it.
func TestSessionsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := db.CreateKey(ctx, "ui", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h := storage.SessionHash{7}
	if err := db.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if s, err := db.Session(ctx, h, now); err != nil || s.KeyID != k.ID || !s.Expires.Equal(record.Milli(now.Add(time.Hour))) {
		t.Errorf("Session after reopening = %+v, %v; want key %s until %v", s, err, k.ID, record.Milli(now.Add(time.Hour)))
	}

	var buf bytes.Buffer
	if _, err := db.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(backup, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Open(backup, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if s, err := b.Session(ctx, h, now); err != nil || s.KeyID != k.ID {
		t.Errorf("Session in the backup = %+v, %v; want key %s", s, err, k.ID)
	}
}

// TestSessionsBucketMissing: a file of the current schema version made
// before sessions were kept has no sessions bucket. A read-only or
// must-exist Open takes it for an empty one and does not make it; a
// plain Open makes it and leaves the schema version as it is.
func TestSessionsBucketMissing(t *testing.T) {
	ctx := context.Background()
	path := makeFile(t)
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketSessions) }); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	hasBucket := func(db *DB) bool {
		var ok bool
		db.bolt.View(func(tx *bolt.Tx) error { ok = tx.Bucket(bucketSessions) != nil; return nil })
		return ok
	}
	h := storage.SessionHash{1}
	now := time.Now()

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Session(ctx, h, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("read-only Session without the bucket: %v, want ErrNotFound", err)
	}
	if r, err := ro.Check(ctx); err != nil || !r.OK() {
		t.Errorf("read-only Check without the bucket = %+v, %v; want a sound file", r, err)
	}
	if hasBucket(ro) {
		t.Error("a read-only Open made the sessions bucket")
	}
	ro.Close()

	me, err := Open(path, Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if hasBucket(me) {
		t.Error("a must-exist Open made the sessions bucket")
	}
	if err := me.TouchSession(ctx, h, now.Add(time.Hour)); err != nil {
		t.Errorf("TouchSession without the bucket: %v", err)
	}
	if err := me.DeleteSession(ctx, h); err != nil {
		t.Errorf("DeleteSession without the bucket: %v", err)
	}
	if n, err := me.DeleteExpiredSessions(ctx, now); err != nil || n != 0 {
		t.Errorf("DeleteExpiredSessions without the bucket = %d, %v; want 0", n, err)
	}
	if _, err := me.RevokeKey(ctx, "k"); err != nil {
		t.Errorf("RevokeKey without the bucket: %v", err)
	}
	me.Close()

	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !hasBucket(db) {
		t.Error("Open did not make the sessions bucket")
	}
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	k, _, err := db.CreateKey(ctx, "ui", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s, err := db.Session(ctx, h, now); err != nil || s.KeyID != k.ID {
		t.Errorf("Session = %+v, %v; want key %s", s, err, k.ID)
	}
}

// TestSessionReadOnly: a read-only Open reads sessions but cannot make
// one, as it writes nothing.
func TestSessionReadOnly(t *testing.T) {
	ctx := context.Background()
	path := makeFile(t)
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	keys, err := ro.Keys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	if err := ro.CreateSession(ctx, storage.SessionHash{1}, keys[0].ID, time.Now().Add(time.Hour)); !errors.Is(err, bolt.ErrDatabaseReadOnly) {
		t.Errorf("CreateSession read-only: %v, want bbolt's ErrDatabaseReadOnly", err)
	}
}

// TestRevokeKeyDeletesSessions: RevokeKey deletes the records of the
// key's sessions and no other's; a session whose key went behind its
// back (revoked by a burner that does not know sessions) is no session
// either, though its record stays until it expires.
func TestRevokeKeyDeletesSessions(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, Options{})
	now := time.Now()
	mk := func(name string, hashes ...storage.SessionHash) storage.Key {
		k, _, err := db.CreateKey(ctx, name, storage.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hashes {
			if err := db.CreateSession(ctx, h, k.ID, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		return k
	}
	mk("a", storage.SessionHash{1}, storage.SessionHash{2})
	b := mk("b", storage.SessionHash{3})
	c := mk("c", storage.SessionHash{4})
	if _, err := db.RevokeKey(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	var left int
	db.bolt.View(func(tx *bolt.Tx) error { left = tx.Bucket(bucketSessions).Stats().KeyN; return nil })
	if left != 2 {
		t.Errorf("%d session records after revoking the key of 2 of 4, want 2", left)
	}
	if s, err := db.Session(ctx, storage.SessionHash{3}, now); err != nil || s.KeyID != b.ID {
		t.Errorf("Session of another key after the revocation = %+v, %v; want it", s, err)
	}

	if err := db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketKeys).Delete([]byte(c.ID)) }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Session(ctx, storage.SessionHash{4}, now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Session whose key is gone: %v, want ErrNotFound", err)
	}
	if n, err := db.DeleteExpiredSessions(ctx, now.Add(time.Hour)); err != nil || n != 2 {
		t.Errorf("DeleteExpiredSessions at their end = %d, %v; want the 2 left", n, err)
	}
}
