package storetest

import (
	"context"
	"testing"
	"time"
)

// testLeases: a lease that is renewed keeps its event from other claims
// past its first end, and ends with the event's outcome; renewing a
// settled event, or taking back the leases of a node that held none
// through another opening, changes nothing (spec §9).
func testLeases(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := openOutbox(t, open, clk)
	deliver(t, db, "one", "bob@x.test")
	deliver(t, db, "two", "bob@x.test")
	clk.Advance(time.Second)
	evs := claim(t, db, "all", clk.Now(), 10) // leased for a minute
	if len(evs) != 2 {
		t.Fatalf("ClaimEvents = %d events, want 2", len(evs))
	}
	renewed, settled := evs[0], evs[1]
	until := clk.Now().Add(5 * time.Minute)
	if err := db.RenewLease(ctx, renewed, until); err != nil {
		t.Fatalf("RenewLease: %v", err)
	}
	if err := db.CompleteEvent(ctx, settled); err != nil {
		t.Fatalf("CompleteEvent: %v", err)
	}
	if err := db.RenewLease(ctx, settled, until); err != nil {
		t.Errorf("RenewLease of a completed event: %v", err)
	}
	if evs := claim(t, db, "all", clk.Now().Add(2*time.Minute), 10); len(evs) != 0 {
		t.Errorf("ClaimEvents after the first lease's end, before the renewed one's = %+v, want none", evs)
	}
	// The leases of this opening are its own: taking back those of an
	// earlier run leaves them.
	if n, err := db.ReclaimLeases(ctx, "test"); err != nil || n != 0 {
		t.Errorf(`ReclaimLeases("test") = %d, %v; want 0, nil (the node's leases are this opening's)`, n, err)
	}
	if evs := claim(t, db, "all", clk.Now().Add(2*time.Minute), 10); len(evs) != 0 {
		t.Errorf("ClaimEvents after ReclaimLeases of this opening's node = %+v, want none", evs)
	}
	evs = claim(t, db, "all", until, 10)
	if len(evs) != 1 || evs[0].Email.ID != renewed.Email.ID {
		t.Fatalf("ClaimEvents once the renewed lease ended = %+v, want %s alone", evs, renewed.Email.ID)
	}
	// A retry ends the lease: renewing it then does not bring it back.
	next := until.Add(time.Second)
	if err := db.RetryEvent(ctx, evs[0], next); err != nil {
		t.Fatalf("RetryEvent: %v", err)
	}
	if err := db.RenewLease(ctx, evs[0], next.Add(time.Hour)); err != nil {
		t.Errorf("RenewLease of a retried event: %v", err)
	}
	if evs := claim(t, db, "all", next, 10); len(evs) != 1 {
		t.Errorf("ClaimEvents when the retry is due, after a RenewLease that came too late = %d events, want 1", len(evs))
	}
}
