package boltdb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"burner/storage"

	bolt "go.etcd.io/bbolt"
)

// TestAttachmentsDeletedWithMessage checks that the index lives as long as
// the message: one recipient's delete keeps it for the other, the last
// delete removes it, and Check finds the file sound throughout.
func TestAttachmentsDeletedWithMessage(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, Options{})
	es := deliver(t, db, "files", "alice@x.org", "bob@x.org")
	other := deliver(t, db, "other", "carol@x.org")
	for _, e := range []storage.Email{es[0], other[0]} {
		if err := db.PutAttachments(ctx, e.ID, storage.Attachments{Files: []storage.Attachment{{Filename: "a.bin", Size: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	indexes := func() int {
		t.Helper()
		n := 0
		db.bolt.View(func(tx *bolt.Tx) error {
			n = tx.Bucket(bucketParts).Stats().KeyN
			return nil
		})
		return n
	}
	checkSound := func(when string) {
		t.Helper()
		if r, err := db.Check(ctx); err != nil || !r.OK() {
			t.Errorf("Check %s = %+v, %v; want a sound file", when, r.Problems, err)
		}
	}
	checkSound("with two indexes")
	if err := db.Delete(ctx, es[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Attachments(ctx, es[1].ID); !ok || err != nil || indexes() != 2 {
		t.Errorf("after deleting one copy: Attachments(bob) = %v, %v with %d indexes; want it kept, 2 indexes", ok, err, indexes())
	}
	checkSound("after deleting one copy")
	if err := db.Delete(ctx, es[1].ID); err != nil {
		t.Fatal(err)
	}
	if n := indexes(); n != 1 {
		t.Errorf("after deleting the last copy %d indexes remain, want 1 (carol's)", n)
	}
	checkSound("after deleting the last copy")
	if n, err := db.Clear(ctx, "carol"); n != 1 || err != nil {
		t.Fatalf("Clear(carol) = %d, %v", n, err)
	}
	if n := indexes(); n != 0 {
		t.Errorf("after Clear %d indexes remain, want 0", n)
	}
}

func TestPutAttachmentsFull(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, Options{Retention: storage.Retention{MaxBytes: 1 << 20}})
	es := deliver(t, db, "files", "alice@x.org")
	big := storage.Attachments{Files: make([]storage.Attachment, 2000)}
	for i := range big.Files {
		big.Files[i].Filename = strings.Repeat("n", 1000)
	}
	if err := db.PutAttachments(ctx, es[0].ID, big); !errors.Is(err, storage.ErrFull) {
		t.Errorf("PutAttachments of a 2 MB index into a 1 MiB file = %v, want ErrFull", err)
	}
	if _, ok, err := db.Attachments(ctx, es[0].ID); ok || err != nil {
		t.Errorf("Attachments after a refused Put = %v, %v; want none stored", ok, err)
	}
	if err := db.PutAttachments(ctx, es[0].ID, storage.Attachments{Files: big.Files[:1]}); err != nil {
		t.Errorf("PutAttachments of a small index = %v, want it stored", err)
	}
}
