package boltdb

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"burner/storage"
	"burner/storage/storetest"

	bolt "go.etcd.io/bbolt"
)

func openDB(t testing.TB, opts Options) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "burner.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func ptr(s string) *string { return &s }

func deliver(t testing.TB, db *DB, subject string, to ...string) []storage.Email {
	t.Helper()
	msg := &storage.Message{From: "sender@example.net", FromName: "Sender", Subject: ptr(subject), Body: ptr("<p>" + subject + "</p>"), Text: subject, Raw: []byte("Subject: " + subject + "\r\n\r\nhi\r\n")}
	got, err := db.Deliver(context.Background(), msg, to)
	if err != nil {
		t.Fatalf("Deliver(%q): %v", to, err)
	}
	return got
}

// TestDeleteFreesMessage: the content and raw records of a message go
// with its last email, and deleting every email, one by one or by Clear
// in steps of smallTx, leaves every bucket of mail empty and the file
// sound.
func TestDeleteFreesMessage(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, Options{})
	keys := func() string {
		t.Helper()
		var s string
		if err := db.bolt.View(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketEmails, bucketIDs, bucketContents, bucketRaw, bucketInboxes} {
				s += fmt.Sprintf("%s:%d ", b, tx.Bucket(b).Stats().KeyN)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	es := deliver(t, db, "shared", "a@x.org", "b@x.org")
	storetest.DeliverMany(t, db, smallTx+10, func(i int) (string, string) { return fmt.Sprint(i), "bulk@x.org" })
	n := smallTx + 10
	for _, step := range []struct {
		do   func() error
		want string
	}{
		{func() error { return db.Delete(ctx, es[0].ID) },
			fmt.Sprintf("emails:%d ids:%d contents:%d raw:%d inboxes:2 ", n+1, n+1, n+1, n+1)},
		{func() error { return db.Delete(ctx, es[1].ID) },
			fmt.Sprintf("emails:%d ids:%d contents:%d raw:%d inboxes:1 ", n, n, n, n)},
		{func() error { _, err := db.Clear(ctx, "bulk"); return err },
			"emails:0 ids:0 contents:0 raw:0 inboxes:0 "},
	} {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		if got := keys(); got != step.want {
			t.Errorf("records = %s, want %s", got, step.want)
		}
		if r, err := db.Check(ctx); err != nil || !r.OK() {
			t.Errorf("Check = %+v, %v; want a sound file", r.Problems, err)
		}
	}
}
