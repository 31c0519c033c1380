package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

func TestCheckSoundFile(t *testing.T) {
	db := openDB(t, Options{})
	deliver(t, db, "one", "alice@x.org", "bob@x.org")
	deliver(t, db, "two", "alice@x.org")
	es := deliver(t, db, "three", "carol@x.org")
	if err := db.Delete(context.Background(), es[0].ID); err != nil {
		t.Fatal(err)
	}
	a, _, _ := db.CreateKey(context.Background(), "a", storage.Scope{})
	db.CreateKey(context.Background(), "b", storage.Scope{})
	// A live session, and one whose key is gone, as a burner that does not
	// know sessions leaves it when it revokes the key: no problem.
	if err := db.CreateSession(context.Background(), storage.SessionHash{1}, a.ID, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).Put(make([]byte, 32), encodeSession("gone", time.Now().Add(time.Hour)))
	}); err != nil {
		t.Fatal(err)
	}
	r, err := db.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Emails != 3 || r.Inboxes != 2 || r.Messages != 2 || r.Keys != 2 || r.SchemaVersion != schemaVersion || r.FileBytes <= 0 {
		t.Errorf("Check = %+v; want a sound file with 3 emails, 2 inboxes, 2 messages, 2 keys", r)
	}
}

// TestCheckFindsDamage breaks each index in turn, behind the storage
// code's back, and expects Check to name what is wrong.
func TestCheckFindsDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(tx *bolt.Tx) error
		want   string
	}{
		{"inbox count", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketInboxes).Put([]byte("alice"), encodeInbox(7, 1))
		}, `inbox "alice" counts 7 emails`},
		{"missing count", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketInboxes).Delete([]byte("bob"))
		}, `inbox "bob" holds 1 emails but has no count`},
		{"ids entry", func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(bucketIDs).Cursor().First()
			return tx.Bucket(bucketIDs).Delete(k)
		}, "the ids index points to"},
		{"stray id", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketIDs).Put(make([]byte, 16), []byte("nowhere"))
		}, "which is not that email"},
		{"reference count", func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketContents)
			k, v := c.Cursor().First()
			_, n := binary.Uvarint(v)
			return c.Put(k, append(binary.AppendUvarint(nil, 9), v[n:]...))
		}, "counts 9 references but"},
		{"raw source", func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(bucketRaw).Cursor().First()
			return tx.Bucket(bucketRaw).Delete(k)
		}, "has no raw source"},
		{"stray raw", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketRaw).Put(be64(999), []byte("x"))
		}, "belongs to no message"},
		{"key hash", func(tx *bolt.Tx) error {
			h, _ := tx.Bucket(bucketKeyHashes).Cursor().First()
			return tx.Bucket(bucketKeyHashes).Delete(h)
		}, "its hash points to"},
		{"email record", func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(bucketEmails).Cursor().First()
			return tx.Bucket(bucketEmails).Put(k, []byte{99})
		}, "corrupt record"},
		{"signature", func(tx *bolt.Tx) error {
			k, v := tx.Bucket(bucketEmails).Cursor().First()
			v = bytes.Clone(v)
			v[emailFixedLen+1] ^= 0xff // the first byte of the signature, after its length
			return tx.Bucket(bucketEmails).Put(k, v)
		}, "its signature is not its message's"},
		{"schema version", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keySchema, []byte{0})
		}, "schema version is 0"},
		{"stray attachment index", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketParts).Put(be64(999), record.EncodeAttachments(storage.Attachments{}))
		}, "attachment index 00000000000003e7 belongs to no message"},
		{"damaged attachment index", func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(bucketContents).Cursor().First()
			return tx.Bucket(bucketParts).Put(k, []byte{1, 0, 0, 0, 5})
		}, "corrupt record"},
		{"session record", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSessions).Put(make([]byte, 32), be64(1)) // no key id
		}, "session 0000000000000000000000000000000000000000000000000000000000000000: storage: corrupt record"},
		{"session key", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSessions).Put([]byte("short"), encodeSession("k", time.Now()))
		}, "session key 73686f7274 is not a token hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, Options{})
			deliver(t, db, "one", "alice@x.org", "bob@x.org")
			db.CreateKey(context.Background(), "k", storage.Scope{})
			if err := db.bolt.Update(tc.break_); err != nil {
				t.Fatal(err)
			}
			r, err := db.Check(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), tc.want) {
				t.Errorf("Check found %q, want a problem saying %q", r.Problems, tc.want)
			}
		})
	}
}

func TestCheckCapsProblems(t *testing.T) {
	db := openDB(t, Options{})
	db.bolt.Update(func(tx *bolt.Tx) error {
		for i := range storage.MaxProblems + 5 {
			tx.Bucket(bucketRaw).Put(be64(uint64(1000+i)), []byte("x"))
		}
		return nil
	})
	r, err := db.Check(context.Background())
	if err != nil || len(r.Problems) != storage.MaxProblems || r.More != 5 {
		t.Errorf("Check = %d problems listed, %d more, %v; want %d and 5", len(r.Problems), r.More, err, storage.MaxProblems)
	}
}
