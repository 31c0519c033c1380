package boltdb

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"

	bolt "go.etcd.io/bbolt"
)

func TestKeys(t *testing.T) {
	clk := storetest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, secret, err := db.CreateKey(ctx, "ci", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, storage.KeyPrefix) || len(secret) < len(storage.KeyPrefix)+43 {
		t.Errorf("CreateKey secret = %q, want %s and 32 bytes of base64", secret, storage.KeyPrefix)
	}
	if _, _, err := db.CreateKey(ctx, "ci", storage.Scope{}); !errors.Is(err, storage.ErrKeyExists) {
		t.Errorf("CreateKey with a taken name: err = %v, want ErrKeyExists", err)
	}
	for _, bad := range []string{"  ", "tab\there", strings.Repeat("n", 65)} {
		if _, _, err := db.CreateKey(ctx, bad, storage.Scope{}); !errors.Is(err, storage.ErrBadKeyName) {
			t.Errorf("CreateKey(%q): err = %v, want ErrBadKeyName", bad, err)
		}
	}
	clk.Advance(time.Second)
	other, _, err := db.CreateKey(ctx, "other", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}

	for _, bad := range []string{"", "bnr_", secret + "x", strings.TrimPrefix(secret, storage.KeyPrefix)} {
		if _, err := db.Authenticate(ctx, bad); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Authenticate(%q) err = %v, want ErrNotFound", bad, err)
		}
	}
	clk.Advance(time.Hour)
	got, err := db.Authenticate(ctx, secret)
	if err != nil || got.ID != k.ID || got.Name != "ci" {
		t.Fatalf("Authenticate(secret) = %+v, %v; want key %s", got, err, k.ID)
	}
	keys, err := db.Keys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("Keys = %+v, %v; want 2 keys", keys, err)
	}
	if keys[0].ID != k.ID || !keys[0].LastUsed.Equal(clk.Now()) || !keys[1].LastUsed.IsZero() {
		t.Errorf("Keys = %+v; want ci used at %v, other never used", keys, clk.Now())
	}

	// Last use survives a restart (Close flushes it).
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys, _ = db.Keys(ctx)
	if len(keys) != 2 || !keys[0].LastUsed.Equal(clk.Now()) || !keys[0].Created.Equal(k.Created) {
		t.Errorf("Keys after reopen = %+v; want last use %v kept", keys, clk.Now())
	}

	clk.Advance(time.Minute)
	if _, err := db.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if revoked, err := db.RevokeKey(ctx, "ci"); err != nil || !revoked.LastUsed.Equal(clk.Now()) {
		t.Fatalf("RevokeKey by name = %+v, %v; want it with its last use %v", revoked, err, clk.Now())
	}
	if _, err := db.Authenticate(ctx, secret); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Authenticate after revoke: err = %v, want ErrNotFound", err)
	}
	if got, err := db.Key(ctx, other.ID); err != nil || got.Name != "other" {
		t.Errorf("Key(%s) = %+v, %v; want key other", other.ID, got, err)
	}
	if _, err := db.RevokeKey(ctx, other.ID); err != nil {
		t.Fatalf("RevokeKey by id: %v", err)
	}
	if _, err := db.RevokeKey(ctx, "ci"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("RevokeKey twice: err = %v, want ErrNotFound", err)
	}
	if _, err := db.Key(ctx, other.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Key of a revoked key: err = %v, want ErrNotFound", err)
	}
	if keys, _ := db.Keys(ctx); len(keys) != 0 {
		t.Errorf("Keys after revoking all = %+v, want none", keys)
	}
}

func TestUsageFlushedPeriodically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{UsageFlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	k, secret, err := db.CreateKey(ctx, "ci", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	// Poll the file (not memory) until the flusher wrote the use.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var stored storage.Key
		err := db.bolt.View(func(tx *bolt.Tx) error {
			var err error
			stored, _, err = decodeKey([]byte(k.ID), tx.Bucket(bucketKeys).Get([]byte(k.ID)))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !stored.LastUsed.IsZero() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("last use was not written to the file within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestKeyScopeEncoding: a scope survives the record encoding and a usage
// flush, and a scope section that is not one this burner wrote is
// corruption, never a wider key.
func TestKeyScopeEncoding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, secret, err := db.CreateKey(ctx, "ci", storage.Scope{Inboxes: []string{"CI-*", "alice"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // writes the use: the record is re-encoded
		t.Fatal(err)
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Key(ctx, k.ID)
	if err != nil || got.LastUsed.IsZero() || strings.Join(got.Scope.Inboxes, ",") != "ci-*,alice" || !got.Scope.ReadOnly {
		t.Errorf("Key after reopening = %+v, %v; want used, ci-*,alice, read-only", got, err)
	}

	hash := make([]byte, 32)
	good := encodeKey(k, hash)
	head := encodeKey(storage.Key{Name: "ci", Created: k.Created}, hash)
	head = head[:len(head)-3] // without the scope section of the zero scope: version, flags, count 0
	for name, rec := range map[string][]byte{
		"unknown version":        append(append([]byte{}, head...), 2, 0, 0),
		"unknown flag":           append(append([]byte{}, head...), 1, 4, 0),
		"metrics, read-write":    append(append([]byte{}, head...), 1, 2, 0),
		"metrics with a pattern": append(append([]byte{}, head...), 1, 3, 1, 1, 'a'),
		"cut short":              append(append([]byte{}, head...), 1),
		"count past the end":     append(append([]byte{}, head...), 1, 0, 5, 1, 'a'),
		"pattern past the end":   append(append([]byte{}, head...), 1, 0, 1, 9, 'a'),
		"upper case pattern":     append(append([]byte{}, head...), 1, 0, 1, 1, 'A'),
		"bad pattern":            append(append([]byte{}, head...), 1, 0, 1, 3, 'a', '@', 'b'),
		"empty pattern":          append(append([]byte{}, head...), 1, 0, 1, 0),
		"trailing bytes":         append(append([]byte{}, head...), 1, 0, 0, 7),
	} {
		if got, _, err := decodeKey([]byte("id"), rec); !errors.Is(err, storage.ErrCorrupt) {
			t.Errorf("decodeKey with a scope section %s = %+v, %v; want storage.ErrCorrupt", name, got, err)
		}
	}
	if got, _, err := decodeKey([]byte("id"), head); err != nil || len(got.Scope.Inboxes) != 0 || got.Scope.ReadOnly {
		t.Errorf("decodeKey without a scope section = %+v, %v; want the zero scope", got, err)
	}
	if got, _, err := decodeKey([]byte(k.ID), good); err != nil || strings.Join(got.Scope.Inboxes, ",") != "ci-*,alice" || !got.Scope.ReadOnly {
		t.Errorf("decodeKey(encodeKey(k)) = %+v, %v; want k's scope", got, err)
	}
	metrics := encodeKey(storage.Key{Name: "prom", Created: k.Created, Scope: storage.Scope{Metrics: true, ReadOnly: true}}, hash)
	if got, _, err := decodeKey([]byte("id"), metrics); err != nil || !got.Scope.Metrics || !got.Scope.ReadOnly || len(got.Scope.Inboxes) != 0 {
		t.Errorf("decodeKey(encodeKey(metrics key)) = %+v, %v; want a read-only metrics scope", got, err)
	}
	if !bytes.HasSuffix(metrics, []byte{1, 3, 0}) {
		t.Errorf("a metrics key's scope section is %x, want 010300 (the documented layout)", metrics[len(metrics)-3:])
	}
}
