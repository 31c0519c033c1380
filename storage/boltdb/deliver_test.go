package boltdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"burner/storage"

	bolt "go.etcd.io/bbolt"
)

// txID returns the id of the last committed write transaction.
func txID(t *testing.T, db *DB) int {
	t.Helper()
	var id int
	if err := db.bolt.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestGroupCommit: deliveries that queue while a commit runs share the
// next one, at most maxBatch to a transaction. The test holds the lead
// itself, as a running commit would, until all have queued.
func TestGroupCommit(t *testing.T) {
	db := openDB(t, Options{})
	const n = maxBatch + 44
	db.commits.mu.Lock()
	db.commits.leading = true
	db.commits.mu.Unlock()
	before := txID(t, db)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := &storage.Message{Subject: ptr(fmt.Sprint("m", i)), Raw: []byte("x")}
			_, err := db.Deliver(context.Background(), msg, []string{fmt.Sprintf("in%d@x.org", i%5)})
			errs <- err
		}()
	}
	queued := func() int {
		db.commits.mu.Lock()
		defer db.commits.mu.Unlock()
		return len(db.commits.queue)
	}
	for deadline := time.Now().Add(10 * time.Second); queued() < n; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries queued after 10 s", queued(), n)
		}
	}
	db.commits.mu.Lock()
	db.commits.queue[0].done <- true // hand on, as the end of a commit does
	db.commits.mu.Unlock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Deliver: %v", err)
		}
	}
	if got := txID(t, db) - before; got != 2 {
		t.Errorf("%d queued deliveries took %d transactions, want 2 (%d, then %d)", n, got, maxBatch, n-maxBatch)
	}
	if st, err := db.Stats(context.Background()); err != nil || st.Emails != n {
		t.Errorf("Stats = %+v, %v; want %d emails", st, err, n)
	}
	if db.commits.leading || len(db.commits.queue) != 0 {
		t.Errorf("after the commits: leading %v with %d queued, want the lead given up", db.commits.leading, len(db.commits.queue))
	}
}

// TestMaxBytes: pages that deletions freed count as room again
// (checkRoom), so that clearing a full file lets mail in.
func TestMaxBytes(t *testing.T) {
	db := openDB(t, Options{MaxBytes: 256 << 10})
	// Random bytes: stored compressed, zeros would take no room at all.
	raw := make([]byte, 32<<10)
	rand.NewChaCha8([32]byte{}).Read(raw)
	msg := &storage.Message{Raw: raw}
	var err error
	stored := 0
	for range 100 { // bounded: the cap is reached after about 8
		if _, err = db.Deliver(context.Background(), msg, []string{"fill@x.org"}); err != nil {
			break
		}
		stored++
	}
	if !errors.Is(err, storage.ErrFull) || stored == 0 {
		t.Fatalf("after %d deliveries of 32 KiB under a 256 KiB cap: err = %v, want ErrFull", stored, err)
	}
	if _, err := db.Clear(context.Background(), "fill"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Deliver(context.Background(), msg, []string{"fill@x.org"}); err != nil {
		t.Errorf("Deliver after Clear: %v, want room again", err)
	}
}

func TestDiskFree(t *testing.T) {
	free, ok := diskFree(t.TempDir())
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd":
		if !ok || free <= 0 {
			t.Errorf("diskFree(a temporary directory) = %d, %v; want a positive size", free, ok)
		}
	}
}
