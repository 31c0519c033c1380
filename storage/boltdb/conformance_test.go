package boltdb_test

import (
	"path/filepath"
	"testing"

	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) storage.Engine {
		db, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), boltdb.Options{
			Now: cfg.Now, Retention: cfg.Retention, Hooks: cfg.Hooks,
		})
		if err != nil {
			t.Fatalf("boltdb.Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}
