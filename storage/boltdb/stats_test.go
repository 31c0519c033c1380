package boltdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"burner/storage"
	"burner/storage/storetest"
)

// TestStatsFileBytes: Stats reports the size of the data in the file,
// which the file holds.
func TestStatsFileBytes(t *testing.T) {
	db := openDB(t, Options{})
	storetest.DeliverMany(t, db, 10, func(i int) (string, string) { return fmt.Sprint(i), fmt.Sprintf("s%d@x.org", i%3) })
	st, err := db.Stats(context.Background())
	fi, ferr := os.Stat(db.Path())
	if err != nil || ferr != nil || st.FileBytes <= 0 || st.FileBytes > fi.Size() {
		t.Errorf("Stats = %+v, %v with a file of %d bytes (%v); want 0 < FileBytes <= the file's size", st, err, fi.Size(), ferr)
	}
}

// TestCheckWritableFull: CheckWritable fails with ErrFull while Deliver
// refuses mail for want of room, and passes again once room is made.
func TestCheckWritableFull(t *testing.T) {
	db := openDB(t, Options{Retention: storage.Retention{MaxBytes: 256 << 10}})
	if err := db.CheckWritable(context.Background()); err != nil {
		t.Fatalf("CheckWritable on a new file: %v", err)
	}
	// Random bytes, as they are stored compressed; healthRoom of them,
	// the size CheckWritable asks room for.
	raw := make([]byte, healthRoom)
	rand.NewChaCha8([32]byte{}).Read(raw)
	var err error
	for range 1000 { // bounded: the cap is reached after about 60
		if _, err = db.Deliver(context.Background(), &storage.Message{Raw: raw}, []string{"fill@x.org"}); err != nil {
			break
		}
	}
	if !errors.Is(err, storage.ErrFull) {
		t.Fatalf("Deliver under a 256 KiB cap: err = %v, want ErrFull", err)
	}
	if err := db.CheckWritable(context.Background()); !errors.Is(err, storage.ErrFull) {
		t.Errorf("CheckWritable while Deliver returns ErrFull: %v, want ErrFull", err)
	}
	if _, err := db.Clear(context.Background(), "fill"); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckWritable(context.Background()); err != nil {
		t.Errorf("CheckWritable after Clear: %v, want room again", err)
	}
}
