package postgres_test

import (
	"context"
	"path/filepath"
	"testing"

	"burner/storage/boltdb"
	"burner/storage/postgres"
	"burner/storage/storetest"
)

// TestCopyAcrossEngines copies a database into a bbolt file and from that
// into a new database: the two engines carry the same, and the last copy
// answers as the first database does (storetest's Copy case copies
// between two stores of one engine).
func TestCopyAcrossEngines(t *testing.T) {
	ctx := context.Background()
	cfg := storetest.CopyConfig()
	src := openDB(t, testDatabase(t), postgres.Options{Now: cfg.Now, Hooks: cfg.Hooks})
	storetest.FillCopySource(t, src, cfg)

	file, err := boltdb.Open(filepath.Join(t.TempDir(), "snap.db"), boltdb.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if n, err := file.Import(ctx, src, nil); err != nil || n.Emails != 6 || n.Events != 8 {
		t.Fatalf("bbolt Import from the database: %+v, %v", n, err)
	}
	storetest.SameStores(t, src, file)
	back := openDB(t, testDatabase(t), postgres.Options{MustBeNew: true, Now: cfg.Now})
	if _, err := back.Import(ctx, file, nil); err != nil {
		t.Fatalf("Import from the bbolt file: %v", err)
	}
	storetest.SameStores(t, src, back)
}
