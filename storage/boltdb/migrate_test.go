package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/internal/keyring"
	"burner/storage/internal/record"
	"burner/storage/storetest"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"
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
	if got := storetest.ListSubjects(t, db, storage.Query{LocalPart: "alice"}); !slices.Equal(got, []string{"two", "one"}) {
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
// delete (spec §8), keep working through a usage flush, and a burner that
// knows only version 3, which would ignore a scope, refuses the file.
func TestVersionThreeFileUpgrades(t *testing.T) {
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A key as version 3 wrote it: the record ends with the hash.
	k, secret, hash, err := keyring.New("old", storage.Scope{}, time.Now())
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
		for _, b := range [][]byte{bucketOutbox, bucketOutboxNew} {
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

// oldEvent is an event as schema versions 5 and 6 stored it.
type oldEvent struct {
	hook     string
	id       uuid.UUID
	received time.Time
	attempts int
	next     time.Time
	to       string
	msg      uint64 // the seq of its eventmsgs record; 0: inline (version 6)
}

// writeOldOutbox writes, in the file at path, the events, eventsdue and
// eventmsgs buckets as versions 5 and 6 laid them out, with msgs (seq ->
// refs and the message) and evs, leaves the eventmsgs sequence at seq,
// removes the outbox bucket and stamps the file version. It encodes by
// hand, so that the test pins the old format.
func writeOldOutbox(t *testing.T, path string, version byte, msgs map[uint64]storage.Message, refs map[uint64]uint64, seq uint64, evs []oldEvent) {
	t.Helper()
	encodeMsg := func(m storage.Message) []byte {
		var flags byte
		subject, body := "", ""
		if m.Subject != nil {
			flags, subject = flags|1, *m.Subject
		}
		if m.Body != nil {
			flags, body = flags|2, *m.Body
		}
		b := []byte{flags}
		for _, f := range []string{m.From, m.FromName, subject, body} {
			b = binary.AppendUvarint(b, uint64(len(f)))
			b = append(b, f...)
		}
		return s2.Encode(nil, b)
	}
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	err = bdb.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketOutbox, bucketOutboxNew} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		events, _ := tx.CreateBucket([]byte("events"))
		due, _ := tx.CreateBucket([]byte("eventsdue"))
		mb, err := tx.CreateBucket([]byte("eventmsgs"))
		if err != nil {
			return err
		}
		for seq, m := range msgs {
			if err := mb.Put(binary.BigEndian.AppendUint64(nil, seq), append(binary.AppendUvarint(nil, refs[seq]), encodeMsg(m)...)); err != nil {
				return err
			}
		}
		if err := mb.SetSequence(seq); err != nil {
			return err
		}
		for _, e := range evs {
			key := append([]byte(e.hook), 0)
			key = binary.BigEndian.AppendUint64(key, uint64(e.received.UnixMilli()))
			key = append(key, e.id[:]...)
			version := byte(1)
			if e.msg == 0 {
				version = 2
			}
			rec := binary.AppendUvarint([]byte{version}, uint64(e.attempts))
			rec = binary.BigEndian.AppendUint64(rec, uint64(e.next.UnixMilli()))
			if e.msg != 0 {
				rec = binary.BigEndian.AppendUint64(rec, e.msg)
			}
			rec = binary.AppendUvarint(rec, uint64(len(e.to)))
			rec = append(rec, e.to...)
			if e.msg == 0 {
				rec = append(rec, encodeMsg(storage.Message{From: "inline@x.test", Body: new("inline")})...)
			}
			if err := events.Put(key, rec); err != nil {
				return err
			}
			dk := append([]byte(e.hook), 0)
			dk = binary.BigEndian.AppendUint64(dk, uint64(e.next.UnixMilli()))
			dk = binary.BigEndian.AppendUint64(dk, uint64(e.received.UnixMilli()))
			if err := due.Put(append(dk, e.id[:]...), nil); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{version})
	})
	if err != nil {
		t.Fatal(err)
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
	received := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	id := record.NewID()
	writeOldOutbox(t, path, 5, map[uint64]storage.Message{1: {From: "s@x.test", Body: new("kept")}}, map[uint64]uint64{1: 1}, 1,
		[]oldEvent{{hook: "h", id: id, received: received, next: received, to: "old@x.test", msg: 1}})
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
	if c := outboxLen(t, db); c != (outboxCount{}) {
		t.Errorf("after the version 5 event was sent: %+v, want nothing", c)
	}
	deliver(t, db, "three", "carol@x.org")
	if c := outboxLen(t, db); c != (outboxCount{new: 1}) {
		t.Errorf("after a delivery making one event: %+v, want 1 inline and no message", c)
	}
	if err := migrate(db.bolt, migrations[:4], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 5 opening it: %v, want ErrSchemaNew", err)
	}
}

// TestVersionSixFileUpgrades: a file of version 6 keeps its outbox in
// three buckets. Open moves it into the outbox bucket: events never
// retried, inline or sharing a message, stay due at their receivedAt; a
// retried one keeps its attempts and due time; the shared message goes
// with its last event; a new shared message takes a seq after the old
// ones; and a burner that knows only version 6 refuses the file.
func TestVersionSixFileUpgrades(t *testing.T) {
	ctx := context.Background()
	path := makeFile(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	received := now.Add(-time.Hour)
	next := now.Add(time.Hour)
	ids := []uuid.UUID{record.NewID(), record.NewID(), record.NewID(), record.NewID()}
	writeOldOutbox(t, path, 6,
		map[uint64]storage.Message{7: {From: "s@x.test", FromName: "S", Subject: new("shared"), Body: new("the body")}}, map[uint64]uint64{7: 2}, 9,
		[]oldEvent{
			{hook: "a", id: ids[0], received: received, next: received, to: "r1@x.test", msg: 7},
			{hook: "a", id: ids[1], received: received.Add(time.Millisecond), attempts: 3, next: next, to: "r2@x.test", msg: 7},
			{hook: "a", id: ids[2], received: received.Add(2 * time.Millisecond), next: received.Add(2 * time.Millisecond), to: "r3@x.test"},
			{hook: "gone", id: ids[3], received: received.Add(-time.Minute), attempts: 1, next: now.Add(-time.Minute), to: "r4@x.test"},
		})
	db, err := Open(path, Options{Hooks: []storage.Hook{{ID: "a"}}})
	if err != nil {
		t.Fatalf("Open of a version 6 file: %v", err)
	}
	defer db.Close()
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	db.bolt.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"events", "eventsdue", "eventmsgs"} {
			if tx.Bucket([]byte(name)) != nil {
				t.Errorf("the bucket %s is still there after the upgrade", name)
			}
		}
		return nil
	})
	if c := outboxLen(t, db); c != (outboxCount{new: 2, retried: 2, due: 2, msgs: 1}) {
		t.Errorf("after the upgrade: %+v, want 2 new events, 2 retried with their due keys, 1 message", c)
	}
	w, err := db.Waiting(ctx)
	want := []storage.HookWaiting{{Hook: "a", Events: 3, Oldest: received}, {Hook: "gone", Events: 1, Oldest: received.Add(-time.Minute)}}
	if err != nil || !reflect.DeepEqual(w, want) {
		t.Errorf("Waiting after the upgrade = %+v, %v; want %+v", w, err, want)
	}
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "a", Now: now, Lease: 3 * time.Hour, Max: 10})
	claimed := evs
	if err != nil || len(evs) != 2 {
		t.Fatalf("ClaimEvents(a) now = %+v, %v; want the 2 never retried", evs, err)
	}
	if e := evs[0]; e.Email.ID != ids[0].String() || e.Email.To != "r1@x.test" || e.Email.FromName != "S" || *e.Email.Subject != "shared" || *e.Email.Body != "the body" || e.Attempts != 0 || !e.Next.Equal(received) {
		t.Errorf("the first event claimed = %+v, want the one sharing its message, due at its receivedAt", e)
	}
	if e := evs[1]; e.Email.ID != ids[2].String() || *e.Email.Body != "inline" {
		t.Errorf("the second event claimed = %+v, want the inline one", e)
	}
	evs, err = db.ClaimEvents(ctx, storage.Claim{Hook: "a", Now: next, Lease: time.Minute, Max: 10})
	if err != nil || len(evs) != 1 || evs[0].Email.ID != ids[1].String() || evs[0].Attempts != 3 || !evs[0].Next.Equal(next) || *evs[0].Email.Body != "the body" {
		t.Fatalf("ClaimEvents(a) at the retry = %+v, %v; want the retried event with 3 attempts", evs, err)
	}
	claimed = append(claimed, evs...)
	if evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "gone", Now: now, Lease: time.Minute, Max: 10}); err != nil || len(evs) != 1 || evs[0].Attempts != 1 {
		t.Errorf("ClaimEvents(gone) = %+v, %v; want its retried event", evs, err)
	}
	for _, e := range claimed {
		db.CompleteEvent(ctx, e)
	}
	if err := db.flushOutbox(); err != nil {
		t.Fatal(err)
	}
	if c := outboxLen(t, db); c != (outboxCount{retried: 1, due: 1}) {
		t.Errorf("after hook a's events were sent: %+v, want only hook gone's event, the message gone with its last event", c)
	}
	deliver(t, db, "shared", "x@x.org", "y@x.org")
	db.bolt.View(func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		if _, m := o.msg(be64(10)); m == nil {
			t.Error("the first message after the upgrade is not at seq 10, after the old ones")
		}
		return nil
	})
	if err := migrate(db.bolt, migrations[:5], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 6 opening it: %v, want ErrSchemaNew", err)
	}
}

// TestVersionEightFileUpgrades: a file of version 8, whose inboxes values
// hold the count alone, gets each inbox's newest time beside it; the file
// checks sound, RecentInboxes and Inboxes read it, and a burner of
// version 8 refuses the file after.
func TestVersionEightFileUpgrades(t *testing.T) {
	ctx := context.Background()
	path := makeFile(t) // alice: two emails, bob: one
	var newest map[string]time.Time
	func() {
		db, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ins, err := db.Inboxes(ctx)
		if err != nil || len(ins) != 2 {
			t.Fatalf("Inboxes = %+v, %v", ins, err)
		}
		newest = map[string]time.Time{ins[0].Name: ins[0].Newest, ins[1].Name: ins[1].Newest}
	}()
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketInboxes)
		var names [][]byte
		b.ForEach(func(k, _ []byte) error { names = append(names, bytes.Clone(k)); return nil })
		for _, k := range names {
			if err := b.Put(k, bytes.Clone(b.Get(k)[:8])); err != nil { // version 8: the count alone
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{8})
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}

	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a version 8 file: %v", err)
	}
	defer db.Close()
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check after the upgrade = %+v, %v; want a sound file", r, err)
	}
	got, err := db.RecentInboxes(ctx, storage.InboxQuery{Limit: 10})
	want := []storage.Inbox{{Name: "alice", Emails: 2, Newest: newest["alice"]}, {Name: "bob", Emails: 1, Newest: newest["bob"]}}
	if newest["bob"].After(newest["alice"]) {
		want[0], want[1] = want[1], want[0]
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("RecentInboxes after the upgrade = %+v, %v; want %+v", got, err, want)
	}
	if err := migrate(db.bolt, migrations[:7], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 8 opening it: %v, want ErrSchemaNew", err)
	}
}

// TestCheckFindsStaleNewest: Check reports an inbox whose stored newest
// time is not its newest email's.
func TestCheckFindsStaleNewest(t *testing.T) {
	db := openDB(t, Options{})
	deliver(t, db, "one", "alice@x.org")
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketInboxes)
		n, at, _ := decodeInbox(b.Get([]byte("alice")))
		return b.Put([]byte("alice"), encodeInbox(n, at-1))
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Check(context.Background())
	if err != nil || r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), `inbox "alice" says its newest email came at`) {
		t.Errorf("Check of a stale newest = %+v, %v; want it reported", r, err)
	}
}

// TestVersionNineFileUpgrades: a file of version 9, from before the auth
// bucket, is brought to the current version with the bucket made; its
// messages have no authentication record and read as off, the file checks
// sound, and a burner that knows only version 9, whose deletions would
// leave records behind, refuses it.
func TestVersionNineFileUpgrades(t *testing.T) {
	path := makeFile(t)
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketAuth); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{9})
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	for _, opts := range []Options{{ReadOnly: true}, {MustExist: true}} {
		if _, err := Open(path, opts); !errors.Is(err, ErrSchemaOld) {
			t.Errorf("Open(%+v) of a version 9 file: %v, want ErrSchemaOld", opts, err)
		}
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a version 9 file: %v", err)
	}
	defer db.Close()
	ctx := context.Background()
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	es, err := db.List(ctx, storage.Query{LocalPart: "alice"})
	if err != nil || len(es) != 2 {
		t.Fatalf("List(alice) = %d emails, %v", len(es), err)
	}
	for _, e := range es {
		if r, err := db.Auth(ctx, e.ID); err != nil || r.Status != storage.AuthOff {
			t.Errorf("Auth of an email from before the upgrade = %+v, %v; want status off", r, err)
		}
	}
	if err := db.PutAuth(ctx, []string{es[0].ID}, storage.AuthResult{Status: storage.AuthDone}); err != nil {
		t.Errorf("PutAuth after the upgrade: %v", err)
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check after the upgrade: %+v, %v", r, err)
	}
	if err := migrate(db.bolt, migrations[:8], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 9 opening it: %v, want ErrSchemaNew", err)
	}
}

// TestVersionTenFileUpgrades: a file of version 10, without the session
// log's and the fault rules' buckets, opens at the current version with
// its mail as it was, and they work; a burner that knows only version 10
// refuses it.
func TestVersionTenFileUpgrades(t *testing.T) {
	ctx := context.Background()
	path := makeFile(t)
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketSMTPLog, bucketFaults} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte{10})
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a version 10 file: %v", err)
	}
	defer db.Close()
	if v := fileVersion(t, db.bolt); v != schemaVersion {
		t.Errorf("after Open the file is at version %d, want %d", v, schemaVersion)
	}
	if es, err := db.List(ctx, storage.Query{LocalPart: "alice"}); err != nil || len(es) != 2 {
		t.Errorf("alice after the upgrade: %d emails, %v; want 2", len(es), err)
	}
	s := storetest.SMTPSession("0195f3b0-0000-7000-8000-000000000001", time.Now(), true, "alice@inbox.test")
	if err := db.WriteSMTPSessions(ctx, []storage.SMTPSession{s}); err != nil {
		t.Errorf("WriteSMTPSessions after the upgrade: %v", err)
	}
	if _, err := db.CreateFaultRule(ctx, storage.FaultRule{Inbox: "alice", Stage: storage.FaultAtRcpt, Reply: "451"}); err != nil {
		t.Errorf("CreateFaultRule after the upgrade: %v", err)
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check after the upgrade = %+v, %v; want no problem", r, err)
	}
	if err := migrate(db.bolt, migrations[:9], slog.New(slog.DiscardHandler)); !errors.Is(err, ErrSchemaNew) {
		t.Errorf("a burner of version 10 opening it: %v, want ErrSchemaNew", err)
	}
}
