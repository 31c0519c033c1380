package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"burner/storage"
)

// testSweepMany: Sweep deletes more old emails than a small step holds
// (an engine that sweeps in steps takes several), over several inboxes,
// keeps the young ones, and an inbox it empties is gone from Inboxes.
func testSweepMany(t *testing.T, open Opener) {
	ctx := context.Background()
	const old = 300
	clk := NewClock(time.Unix(1_700_000_000, 0))
	db := open(t, Config{Now: clk.Now, Retention: storage.Retention{MaxAge: time.Hour}})
	DeliverMany(t, db, old, func(i int) (string, string) {
		return fmt.Sprint("old", i), fmt.Sprintf("in%d@x.org", i%3)
	})
	clk.Advance(30 * time.Minute)
	deliver(t, db, "young", "in0@x.org")
	deliver(t, db, "young", "in1@x.org")
	clk.Advance(31 * time.Minute) // the old ones are now over an hour old
	if n, err := db.Sweep(ctx); err != nil || n != old {
		t.Fatalf("Sweep = %d, %v; want %d deleted", n, err, old)
	}
	for _, in := range []string{"in0", "in1"} {
		if got := ListSubjects(t, db, storage.Query{LocalPart: in}); !slices.Equal(got, []string{"young"}) {
			t.Errorf("List(%s) after Sweep = %q, want [young]", in, got)
		}
	}
	if got := inboxCounts(t, db); !maps.Equal(got, map[string]int{"in0": 1, "in1": 1}) {
		t.Errorf("Inboxes counts after Sweep = %v, want in0:1 in1:1 and in2 gone", got)
	}
	if n, err := db.Sweep(ctx); n != 0 || err != nil {
		t.Errorf("second Sweep = %d, %v; want nothing left to do", n, err)
	}
}

// testMaxBytes: past the size cap, Deliver returns an error wrapping
// ErrFull and stores nothing of the refused message, what was stored
// before stays, and an attachment index too big for the room left is
// refused the same way. It assumes nothing of what an engine counts but
// that 16 MiB of incompressible mail does not fit in a 1 MiB cap.
func testMaxBytes(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{Retention: storage.Retention{MaxBytes: 1 << 20}})
	rng := rand.NewChaCha8([32]byte{})
	var (
		err    error
		stored []storage.Email
	)
	for i := range 256 { // bounded: 16 MiB in all
		raw := make([]byte, 64<<10)
		rng.Read(raw) // random bytes: no engine compresses them away
		var es []storage.Email
		if es, err = db.Deliver(ctx, &storage.Message{Subject: ptr(fmt.Sprint("m", i)), Raw: raw}, []string{"fill@x.org"}); err != nil {
			break
		}
		stored = append(stored, es...)
	}
	if !errors.Is(err, storage.ErrFull) {
		t.Fatalf("after %d deliveries of 64 KiB under a 1 MiB cap: err = %v, want ErrFull", len(stored), err)
	}
	if got := ListSubjects(t, db, storage.Query{LocalPart: "fill", NoBody: true}); len(got) != len(stored) {
		t.Errorf("List after ErrFull = %d emails, want the %d delivered before", len(got), len(stored))
	}
	if st, err := db.Stats(ctx); err != nil || st.Emails != len(stored) {
		t.Errorf("Stats after ErrFull = %+v, %v; want %d emails", st, err, len(stored))
	}
	if len(stored) == 0 {
		return // the cap left no room for an email to index
	}
	if raw, err := db.Raw(ctx, stored[0].ID); err != nil || len(raw) != 64<<10 {
		t.Errorf("Raw of an email stored before ErrFull = %d bytes, %v; want 64 KiB", len(raw), err)
	}
	big := storage.Attachments{Files: make([]storage.Attachment, 2000)}
	for i := range big.Files {
		name := make([]byte, 500)
		rng.Read(name)
		big.Files[i].Filename = fmt.Sprintf("%x.bin", name) // random: it does not compress below 64 KiB
	}
	if err := db.PutAttachments(ctx, stored[0].ID, big); !errors.Is(err, storage.ErrFull) {
		t.Errorf("PutAttachments of a 2 MB index into a full store = %v, want ErrFull", err)
	}
	if _, ok, err := db.Attachments(ctx, stored[0].ID); ok || err != nil {
		t.Errorf("Attachments after a refused Put = %v, %v; want none stored", ok, err)
	}
}

// inboxCounts returns Inboxes as a map of name to count.
func inboxCounts(t *testing.T, db storage.Engine) map[string]int {
	t.Helper()
	ins, err := db.Inboxes(context.Background())
	if err != nil {
		t.Fatalf("Inboxes: %v", err)
	}
	out := map[string]int{}
	for _, in := range ins {
		out[in.Name] = in.Emails
	}
	return out
}
