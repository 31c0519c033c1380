package boltdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"

	bolt "go.etcd.io/bbolt"
)

// counts returns the inboxes bucket as a map, to check it against the
// emails it counts.
func counts(t *testing.T, db *DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketInboxes).ForEach(func(k, _ []byte) error {
			out[string(k)] = inboxCount(tx, k)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSweepAppliesALoweredCap: a file reopened with a lower cap than it
// was filled under is brought down to it by Sweep, in steps.
func TestSweepAppliesALoweredCap(t *testing.T) {
	path := t.TempDir() + "/burner.db"
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.DeliverMany(t, db, 600, func(i int) (string, string) { return fmt.Sprint(i), fmt.Sprintf("box%d@x.org", i%2) })
	db.Close()
	db, err = Open(path, Options{Retention: storage.Retention{MaxPerInbox: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.Sweep(context.Background())
	if err != nil || n != 580 {
		t.Fatalf("Sweep with a cap of 10 over 2x300 = %d, %v; want 580", n, err)
	}
	if got := storetest.ListSubjects(t, db, storage.Query{LocalPart: "box1"}); len(got) != 10 {
		t.Errorf("List(box1) = %q, want 10 left", got)
	}
	if got := counts(t, db); got["box0"] != 10 || got["box1"] != 10 {
		t.Errorf("inbox counts = %v, want 10 each", got)
	}
}

// TestSweepForgetsRCPTs: the RCPTs counted for rules with PerMinute are
// held in memory, and Sweep drops them once a minute old.
func TestSweepForgetsRCPTs(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := openDB(t, Options{Now: clock.Now})
	storetest.SweepForgetsRCPTs(t, db, clock, func() int {
		db.rcpts.mu.Lock()
		defer db.rcpts.mu.Unlock()
		n := 0
		for _, times := range db.rcpts.at {
			n += len(times)
		}
		return n
	})
}
