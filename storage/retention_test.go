package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

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

func TestMaxPerInboxAtDelivery(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	db := openDB(t, Options{Now: clk.Now, MaxPerInbox: 3})
	for i := range 5 {
		deliver(t, db, fmt.Sprint("m", i), "capped@x.org")
		clk.Advance(time.Millisecond)
	}
	deliver(t, db, "other", "free@x.org")
	if got := list(t, db, Query{LocalPart: "capped"}); !equal(got, []string{"m4", "m3", "m2"}) {
		t.Errorf("List(capped) with MaxPerInbox 3 = %q, want the newest 3", got)
	}
	if got := counts(t, db); got["capped"] != 3 || got["free"] != 1 || len(got) != 2 {
		t.Errorf("inbox counts = %v, want capped:3 free:1", got)
	}
}

func TestSweep(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	db := openDB(t, Options{Now: clk.Now, MaxAge: time.Hour})
	deliverMany(t, db, smallTx+10, func(i int) (string, string) { // more than one transaction's worth
		return fmt.Sprint("old", i), fmt.Sprintf("in%d@x.org", i%3)
	})
	clk.Advance(30 * time.Minute)
	deliver(t, db, "young", "in0@x.org")
	deliver(t, db, "young", "in1@x.org")
	clk.Advance(31 * time.Minute) // the first batch is now 61 minutes old

	n, err := db.Sweep(context.Background())
	if err != nil || n != smallTx+10 {
		t.Fatalf("Sweep = %d, %v; want %d deleted", n, err, smallTx+10)
	}
	for _, in := range []string{"in0", "in1"} {
		if got := list(t, db, Query{LocalPart: in}); !equal(got, []string{"young"}) {
			t.Errorf("List(%s) after Sweep = %q, want [young]", in, got)
		}
	}
	if got := counts(t, db); len(got) != 2 || got["in0"] != 1 || got["in1"] != 1 {
		t.Errorf("inbox counts after Sweep = %v, want in0:1 in1:1 and in2 gone", got)
	}
	if n, err := db.Sweep(context.Background()); n != 0 || err != nil {
		t.Errorf("second Sweep = %d, %v; want nothing left to do", n, err)
	}
}

func TestSweepAppliesALoweredCap(t *testing.T) {
	path := t.TempDir() + "/burner.db"
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	deliverMany(t, db, 600, func(i int) (string, string) { return fmt.Sprint(i), fmt.Sprintf("box%d@x.org", i%2) })
	db.Close()
	db, err = Open(path, Options{MaxPerInbox: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.Sweep(context.Background())
	if err != nil || n != 580 {
		t.Fatalf("Sweep with a cap of 10 over 2x300 = %d, %v; want 580", n, err)
	}
	if got := list(t, db, Query{LocalPart: "box1"}); len(got) != 10 {
		t.Errorf("List(box1) = %q, want 10 left", got)
	}
	if got := counts(t, db); got["box0"] != 10 || got["box1"] != 10 {
		t.Errorf("inbox counts = %v, want 10 each", got)
	}
}

func TestSweepStopsWithContext(t *testing.T) {
	db := openDB(t, Options{MaxAge: time.Nanosecond})
	deliver(t, db, "x", "a@x.org")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.Sweep(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Sweep with a canceled context: err = %v, want context.Canceled", err)
	}
}

func TestMaxBytes(t *testing.T) {
	db := openDB(t, Options{MaxBytes: 256 << 10})
	// Random bytes: stored compressed, zeros would take no room at all.
	raw := make([]byte, 32<<10)
	rand.NewChaCha8([32]byte{}).Read(raw)
	msg := &Message{Raw: raw}
	var err error
	stored := 0
	for range 100 { // bounded: the cap is reached after about 8
		if _, err = db.Deliver(context.Background(), msg, []string{"fill@x.org"}); err != nil {
			break
		}
		stored++
	}
	if !errors.Is(err, ErrFull) || stored == 0 {
		t.Fatalf("after %d deliveries of 32 KiB under a 256 KiB cap: err = %v, want ErrFull", stored, err)
	}
	// Clearing makes room again: freed pages count as free.
	if _, err := db.Clear(context.Background(), "fill"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Deliver(context.Background(), msg, []string{"fill@x.org"}); err != nil {
		t.Errorf("Deliver after Clear: %v, want room again", err)
	}
}

func TestStatsAndCheckWritable(t *testing.T) {
	db := openDB(t, Options{})
	deliverMany(t, db, 10, func(i int) (string, string) { return fmt.Sprint(i), fmt.Sprintf("s%d@x.org", i%3) })
	st, err := db.Stats(context.Background())
	if err != nil || st.Emails != 10 || st.Inboxes != 3 || st.FileBytes <= 0 {
		t.Errorf("Stats = %+v, %v; want 10 emails in 3 inboxes", st, err)
	}
	if err := db.CheckWritable(context.Background()); err != nil {
		t.Errorf("CheckWritable on an open file: %v", err)
	}
	db.Close()
	if err := db.CheckWritable(context.Background()); err == nil {
		t.Error("CheckWritable on a closed file succeeded")
	}
}
