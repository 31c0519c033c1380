package boltdb

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"

	bolt "go.etcd.io/bbolt"
)

// openUnchanged opens path with opts, expecting an error wrapping want,
// and checks the file is byte for byte what it was.
func openUnchanged(t *testing.T, path string, opts Options, want error) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, opts)
	if err == nil {
		db.Close()
	}
	if !errors.Is(err, want) || !strings.Contains(err.Error(), path) {
		t.Errorf("Open(%s, %+v) = %v, want an error naming the file and wrapping %v", path, opts, err, want)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("Open(%s, %+v) changed the file", path, opts)
	}
}

// TestOpenForeignFile: a bbolt file that is not burner's, or a file that
// is not bbolt's, is refused by every mode and left as it was.
func TestOpenForeignFile(t *testing.T) {
	foreign := filepath.Join(t.TempDir(), "other.db")
	bdb, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("widgets"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	text := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(text, bytes.Repeat([]byte("not a database\n"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{ReadOnly: true}, {MustExist: true}, {}} {
		openUnchanged(t, foreign, opts, ErrNotBurner)
		openUnchanged(t, text, opts, ErrNotBurner)
	}
	openUnchanged(t, empty, Options{ReadOnly: true}, ErrNotBurner)
	openUnchanged(t, empty, Options{MustExist: true}, ErrNotBurner)
}

// TestOpenReadOnlyOldAndNewSchema: inspection never upgrades a file: an
// older one is refused with ErrSchemaOld (and not migrated), a newer one
// with ErrSchemaNew; a current one opens and is not written, even by Close.
func TestOpenReadOnlyOldAndNewSchema(t *testing.T) {
	path := makeFile(t)
	setVersion(t, path, []byte{byte(schemaVersion - 1)})
	openUnchanged(t, path, Options{ReadOnly: true}, ErrSchemaOld)
	openUnchanged(t, path, Options{MustExist: true}, ErrSchemaOld)
	if _, err := Open(path, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "burner serve") {
		t.Errorf("Open of an old file read-only: %v, want it to say to run burner serve", err)
	}
	setVersion(t, path, []byte{byte(schemaVersion + 1)})
	openUnchanged(t, path, Options{ReadOnly: true}, ErrSchemaNew)
	openUnchanged(t, path, Options{MustExist: true}, ErrSchemaNew)

	setVersion(t, path, []byte{byte(schemaVersion)})
	before, _ := os.ReadFile(path)
	db, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open of a current file read-only: %v", err)
	}
	if got := storetest.ListSubjects(t, db, storage.Query{LocalPart: "alice"}); len(got) != 2 {
		t.Errorf("List(alice) read-only = %q, want 2 emails", got)
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close of a read-only DB: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a read-only Open, List and Close changed the file")
	}
}

// TestOpenMissingFile: only the default mode creates a file.
func TestOpenMissingFile(t *testing.T) {
	for _, opts := range []Options{{ReadOnly: true}, {MustExist: true}} {
		path := filepath.Join(t.TempDir(), "typo.db")
		db, err := Open(path, opts)
		if err == nil {
			db.Close()
		}
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("Open(missing, %+v) = %v, want fs.ErrNotExist naming the file", opts, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(missing, %+v) created the file", opts)
		}
	}
}

// TestCheckReadOnly: Check runs on a file opened read-only.
func TestCheckReadOnly(t *testing.T) {
	path := makeFile(t)
	db, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Check(context.Background())
	if err != nil || !r.OK() || r.Emails != 3 {
		t.Errorf("Check read-only = %+v, %v; want a sound report of 3 emails", r, err)
	}
}

// TestReopenKeepsMail: what was delivered is there after Close and Open,
// and a second Open of a file in use fails with ErrLocked.
func TestReopenKeepsMail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := &storage.Message{From: "a@b.c", Subject: ptr("kept"), Text: "", Raw: []byte("x")}
	got, err := db.Deliver(context.Background(), msg, []string{"k@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, storage.ErrLocked) {
		t.Errorf("second Open of a file in use: err = %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if e, err := db.Email(context.Background(), got[0].ID); err != nil || *e.Subject != "kept" {
		t.Errorf("Email after reopen = %+v, %v", e, err)
	}
}
