package boltdb

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"burner/storage"
	"burner/storage/storetest"
)

// TestCopyFromReadOnly copies a file as `burner copy` does, from the file
// reopened read-only, after Close wrote the key use noted in memory: the
// copy answers as the source does (storetest's Copy case copies from a
// store still open).
func TestCopyFromReadOnly(t *testing.T) {
	ctx := context.Background()
	cfg := storetest.CopyConfig()
	path := filepath.Join(t.TempDir(), "src.db")
	db, err := Open(path, Options{Now: cfg.Now, Hooks: cfg.Hooks})
	if err != nil {
		t.Fatal(err)
	}
	secret := storetest.FillCopySource(t, db, cfg)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := openDB(t, Options{Now: cfg.Now})
	if n, err := dst.Import(ctx, src, nil); err != nil || n.Messages != 3 || n.Emails != 6 || n.Events != 8 || n.Keys != 3 {
		t.Fatalf("Import from a read-only file: %+v, %v; want 3 keys, 3 messages, 6 emails, 8 events", n, err)
	}
	storetest.SameStores(t, src, dst)
	keys, _ := dst.Keys(ctx)
	if !slices.ContainsFunc(keys, func(k storage.Key) bool { return k.Name == "ci" && !k.LastUsed.IsZero() }) {
		t.Errorf("the key use written at Close was not copied: %+v", keys)
	}
	if k, err := dst.Authenticate(ctx, secret); err != nil || k.Name != "ci" {
		t.Errorf("Authenticate on the copy with the source's secret: %+v, %v", k, err)
	}
}
