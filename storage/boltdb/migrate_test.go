package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"

	bolt "go.etcd.io/bbolt"
)

// makeFile writes a data file in the current layout with some mail and a
// key, and returns its path, closed.
func makeFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	deliver(t, db, "one", "alice@x.org", "bob@x.org")
	deliver(t, db, "two", "alice@x.org")
	if _, _, err := db.CreateKey(context.Background(), "k", storage.Scope{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// setVersion writes v as the schema version of the file at path.
func setVersion(t *testing.T, path string, v []byte) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, v) }); err != nil {
		t.Fatal(err)
	}
}

func fileVersion(t *testing.T, bdb *bolt.DB) int {
	t.Helper()
	var v []byte
	bdb.View(func(tx *bolt.Tx) error { v = bytes.Clone(tx.Bucket(bucketMeta).Get(keySchema)); return nil })
	if len(v) != 1 {
		t.Fatalf("schema version %x, want one byte", v)
	}
	return int(v[0])
}

func TestSchemaVersionMatchesMigrations(t *testing.T) {
	if schemaVersion != len(migrations)+1 {
		t.Errorf("schemaVersion = %d with %d migrations", schemaVersion, len(migrations))
	}
	db := openDB(t, Options{})
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("a new file has schema version %d, want %d", v, schemaVersion)
	}
}

// TestMigrateSteps runs the upgrade path with test-only steps on a file of
// the current layout, as if the binary knew two more versions: each step
// runs once, in order, in its own transaction, is logged, and bumps the
// version; the mail is still there.
func TestMigrateSteps(t *testing.T) {
	path := makeFile(t)
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	steps := append(migrations[:len(migrations):len(migrations)],
		migration{"mark the file", func(tx *bolt.Tx) error {
			ran = append(ran, "mark")
			return tx.Bucket(bucketMeta).Put([]byte("marked"), []byte("yes"))
		}},
		migration{"count raw messages", func(tx *bolt.Tx) error {
			ran = append(ran, "count")
			if tx.Bucket(bucketMeta).Get([]byte("marked")) == nil {
				t.Error("step 2 ran before step 1 committed")
			}
			return tx.Bucket(bucketMeta).Put([]byte("raw"), []byte{byte(tx.Bucket(bucketRaw).Stats().KeyN)})
		}},
	)
	var logs bytes.Buffer
	if err := migrate(bdb, steps, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if got := strings.Join(ran, ","); got != "mark,count" {
		t.Errorf("steps ran %q, want mark,count", got)
	}
	want := schemaVersion + 2
	if v := fileVersion(t, bdb); v != want {
		t.Errorf("after migrating, schema version %d, want %d", v, want)
	}
	bdb.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketMeta).Get([]byte("raw")); len(n) != 1 || n[0] != 2 {
			t.Errorf("the second step counted %v raw messages, want 2", n)
		}
		return nil
	})
	for _, line := range []string{
		fmt.Sprintf("from_version=%d to_version=%d", want-2, want-1), `step="mark the file"`,
		fmt.Sprintf("from_version=%d to_version=%d", want-1, want), "data file migrated",
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("the log lacks %q:\n%s", line, logs.String())
		}
	}
	// Run again: at the target version, nothing runs.
	ran = nil
	if err := migrate(bdb, steps, slog.New(slog.DiscardHandler)); err != nil || len(ran) != 0 {
		t.Errorf("migrate at the target version: %v, ran %v; want nothing", err, ran)
	}
	bdb.Close()

	// This binary knows only schemaVersion: the migrated file is newer,
	// and it says so, naming both versions.
	_, err = Open(path, Options{})
	if !errors.Is(err, ErrSchemaNew) || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d,", want)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("up to %d:", schemaVersion)) {
		t.Errorf("Open of a file from a newer burner: %v, want ErrSchemaNew naming versions %d and %d", err, want, schemaVersion)
	}

	// Back at the current version, this binary opens it and the mail is there.
	setVersion(t, path, []byte{byte(schemaVersion)})
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := storetest.ListSubjects(t, db, storage.Query{LocalPart: "alice"}); !equal(got, []string{"two", "one"}) {
		t.Errorf("alice's inbox after the migration: %v", got)
	}
}

// TestMigrateStepFails: a failing step leaves the file at the version
// before it, with the steps before it committed and nothing of its own.
func TestMigrateStepFails(t *testing.T) {
	path := makeFile(t)
	setVersion(t, path, []byte{1})
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	steps := []migration{
		{"first", func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte("first"), []byte("done")) }},
		{"second", func(tx *bolt.Tx) error {
			tx.Bucket(bucketMeta).Put([]byte("second"), []byte("half"))
			return errors.New("disk on fire")
		}},
	}
	err = migrate(bdb, steps, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "migrate schema version 2 to 3 (second): disk on fire") {
		t.Errorf("migrate with a failing step: %v", err)
	}
	if v := fileVersion(t, bdb); v != 2 {
		t.Errorf("after a failed step 2->3 the version is %d, want 2", v)
	}
	bdb.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta).Get([]byte("first")) == nil || tx.Bucket(bucketMeta).Get([]byte("second")) != nil {
			t.Error("want the first step committed and nothing of the failed one")
		}
		return nil
	})
	// Fixed, the same call resumes at step 2.
	steps[1].run = func(tx *bolt.Tx) error { return nil }
	if err := migrate(bdb, steps, slog.New(slog.DiscardHandler)); err != nil || fileVersion(t, bdb) != 3 {
		t.Errorf("resuming: %v, version %d; want 3", err, fileVersion(t, bdb))
	}
}

// TestOpenRefusesUnknownVersions: a file from a newer burner, or with a
// version that is no version, is refused with a message that says so.
func TestOpenRefusesUnknownVersions(t *testing.T) {
	for _, tc := range []struct {
		version []byte
		want    string
	}{
		{[]byte{byte(schemaVersion + 1)}, "this burner reads versions up to"},
		{[]byte{255}, "schema version 255"},
		{[]byte{0}, "unreadable schema version"},
		{[]byte{1, 2}, "unreadable schema version"},
	} {
		path := makeFile(t)
		setVersion(t, path, tc.version)
		db, err := Open(path, Options{})
		if err == nil {
			db.Close()
			t.Errorf("Open with schema version %x succeeded", tc.version)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("Open with schema version %x: %v, want it to name the file and say %q", tc.version, err, tc.want)
		}
	}
}

func TestOpenCurrentVersionLogsNothing(t *testing.T) {
	path := makeFile(t)
	var logs bytes.Buffer
	db, err := Open(path, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if logs.Len() != 0 {
		t.Errorf("opening a current file logged %q", logs.String())
	}
}

// TestVersionOneFileUpgrades: a file stamped version 1 (the layout before
// compact records) is brought to the current version at Open, and its
// emails, written in either encoding, read as before.
func TestVersionOneFileUpgrades(t *testing.T) {
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := db.Deliver(context.Background(), &storage.Message{From: "a@b.c", Subject: ptr("kept"), Raw: []byte("Subject: kept\r\n\r\nhi\r\n")}, []string{"v1@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	err = db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, []byte{1}) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a version 1 file: %v", err)
	}
	defer db.Close()
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	if e, err := db.Email(context.Background(), stored[0].ID); err != nil || *e.Subject != "kept" {
		t.Errorf("Email after the upgrade = %+v, %v", e, err)
	}
}

// TestVersionTwoFileUpgrades: a file of version 2, from before the parts
// bucket, is brought to version 3 with the bucket made, and a burner that
// knows only version 2 would find it newer and refuse it.
func TestVersionTwoFileUpgrades(t *testing.T) {
	path := makeFile(t)
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketParts); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{2})
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a version 2 file: %v", err)
	}
	defer db.Close()
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	db.bolt.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketParts) == nil {
			t.Error("the parts bucket is missing after the upgrade")
		}
		return nil
	})
	if err := migrate(db.bolt, migrations[:1], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 2 opening it: %v, want ErrSchemaNew", err)
	}
}

// TestVersionThreeFileUpgrades: a file of version 3 holds key records
// from before scopes (no scope section). It is brought to the current
// version with nothing rewritten; its keys reach every inbox and may
// delete (SPEC §8), keep working through a usage flush, and a burner that
// knows only version 3, which would ignore a scope, refuses the file.
func TestVersionThreeFileUpgrades(t *testing.T) {
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A key as version 3 wrote it: the record ends with the hash.
	k, secret, hash, err := storage.NewKey("old", storage.Scope{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rec := binary.AppendUvarint(nil, uint64(len(k.Name)))
	rec = append(rec, k.Name...)
	rec = binary.BigEndian.AppendUint64(rec, uint64(k.Created.UnixMilli()))
	rec = binary.BigEndian.AppendUint64(rec, 0)
	rec = append(rec, hash[:]...)
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketKeys).Put([]byte(k.ID), rec); err != nil {
			return err
		}
		if err := tx.Bucket(bucketKeyHashes).Put(hash[:], []byte(k.ID)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{3})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	db, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a version 3 file: %v", err)
	}
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	db.bolt.View(func(tx *bolt.Tx) error {
		if got := tx.Bucket(bucketKeys).Get([]byte(k.ID)); !bytes.Equal(got, rec) {
			t.Errorf("the key record was rewritten by the upgrade: %x, want %x", got, rec)
		}
		return nil
	})
	got, err := db.Authenticate(context.Background(), secret)
	if err != nil || got.ID != k.ID || len(got.Scope.Inboxes) != 0 || got.Scope.ReadOnly || !got.Scope.Everywhere() {
		t.Errorf("Authenticate with a version 3 key = %+v, %v; want it, reaching every inbox, read-write", got, err)
	}
	if err := migrate(db.bolt, migrations[:2], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 3 opening it: %v, want ErrSchemaNew", err)
	}
	// Close flushes the use, rewriting the record in the current encoding.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err = db.Key(context.Background(), k.ID)
	if err != nil || got.LastUsed.IsZero() || len(got.Scope.Inboxes) != 0 || got.Scope.ReadOnly {
		t.Errorf("Key after the use was written = %+v, %v; want used, every inbox, read-write", got, err)
	}
}

// TestVersionFourFileUpgrades: a file of version 4, from before the
// webhook outbox, is brought to version 5 with its buckets made, takes
// events at once, and a burner that knows only version 4, which would
// leave events unsent, refuses it.
func TestVersionFourFileUpgrades(t *testing.T) {
	path := makeFile(t)
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketEvents, bucketEventsDue, bucketEventMsgs} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{4})
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrSchemaOld) {
		t.Errorf("a read-only Open of a version 4 file: %v, want ErrSchemaOld", err)
	}
	db, err := Open(path, Options{Hooks: []storage.Hook{{ID: "h"}}})
	if err != nil {
		t.Fatalf("Open of a version 4 file: %v", err)
	}
	defer db.Close()
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	deliver(t, db, "three", "carol@x.org")
	w, err := db.Waiting(context.Background())
	if err != nil || len(w) != 1 || w[0].Hook != "h" || w[0].Events != 1 {
		t.Errorf("Waiting after a delivery to the upgraded file = %+v, %v; want one event of hook h", w, err)
	}
	if err := migrate(db.bolt, migrations[:3], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 4 opening it: %v, want ErrSchemaNew", err)
	}
}

// TestVersionFiveFileUpgrades: a file of version 5, whose events share
// their message record, opens at the current version with its pending
// event sent and removed with its message, and new single events are
// written inline; a burner that knows only version 5, which would call an
// inline record corrupt, refuses it.
func TestVersionFiveFileUpgrades(t *testing.T) {
	ctx := context.Background()
	path := makeFile(t)
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	received := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	id := storage.NewID()
	put, err := importEvent(storage.Event{Hook: "h", Email: storage.Email{ID: id.String(), To: "old@x.test", From: "s@x.test", Body: new("kept"), ReceivedAt: received}})
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		if err := put(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{5})
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	db, err := Open(path, Options{Hooks: []storage.Hook{{ID: "h"}}})
	if err != nil {
		t.Fatalf("Open of a version 5 file: %v", err)
	}
	defer db.Close()
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "h", Now: time.Now(), Lease: time.Minute, Max: 10})
	if err != nil || len(evs) != 1 || evs[0].Email.ID != id.String() || evs[0].Email.Body == nil || *evs[0].Email.Body != "kept" {
		t.Fatalf("ClaimEvents on the upgraded file = %+v, %v; want the version 5 event with its body", evs, err)
	}
	db.CompleteEvent(ctx, evs[0])
	if err := db.flushOutbox(); err != nil {
		t.Fatal(err)
	}
	if n, m := bucketLen(t, db, bucketEvents), bucketLen(t, db, bucketEventMsgs); n+m != 0 {
		t.Errorf("after the version 5 event was sent: %d events and %d messages, want none", n, m)
	}
	deliver(t, db, "three", "carol@x.org")
	if n, m := bucketLen(t, db, bucketEvents), bucketLen(t, db, bucketEventMsgs); n != 1 || m != 0 {
		t.Errorf("after a delivery making one event: %d events and %d messages, want 1 inline and none", n, m)
	}
	if err := migrate(db.bolt, migrations[:4], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 5 opening it: %v, want ErrSchemaNew", err)
	}
}
