package postgres_test

import (
	"context"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/postgres"
)

// TestReclaimLeases: a node that opens the database again takes back at
// once the leases its earlier opening held (spec §9), and only those: not
// another node's, nor those of a node running now under another name.
func TestReclaimLeases(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	first := openDB(t, dbURL, postgres.Options{Hooks: outboxHooks}) // node "a", killed below
	other := openDB(t, dbURL, postgres.Options{Hooks: outboxHooks}) // node "b", running on
	deliverTo(t, first, "one", "x@x.test")
	deliverTo(t, first, "two", "y@x.test")
	now := time.Now()
	claim := func(ob storage.Outbox, node string, at time.Time) []storage.Event {
		t.Helper()
		evs, err := ob.ClaimEvents(ctx, storage.Claim{Hook: "all", Node: node, Now: at, Lease: 30 * time.Second, Max: 1})
		if err != nil {
			t.Fatalf("ClaimEvents(%s): %v", node, err)
		}
		return evs
	}
	byA, byB := claim(first, "a", now), claim(other, "b", now)
	if len(byA) != 1 || len(byB) != 1 {
		t.Fatalf("ClaimEvents by a and b = %d and %d events, want one each", len(byA), len(byB))
	}
	// The first opening dies with its lease held, as a kill -9 leaves it;
	// closing the pool writes nothing of the outbox.
	first.Close()

	again := openDB(t, dbURL, postgres.Options{Hooks: outboxHooks}) // node "a" restarted
	if evs := claim(again, "a", now.Add(time.Second)); len(evs) != 0 {
		t.Fatalf("ClaimEvents before ReclaimLeases = %+v, want none: both are leased", evs)
	}
	if n, err := other.ReclaimLeases(ctx, "b"); err != nil || n != 0 {
		t.Errorf(`ReclaimLeases("b") by b itself = %d, %v; want 0: the lease is its own opening's`, n, err)
	}
	n, err := again.ReclaimLeases(ctx, "a")
	if err != nil || n != 1 {
		t.Fatalf(`ReclaimLeases("a") by a restarted = %d, %v; want 1, the lease of its earlier run`, n, err)
	}
	evs := claim(again, "a", now.Add(time.Second))
	if len(evs) != 1 || evs[0].Email.ID != byA[0].Email.ID {
		t.Fatalf("ClaimEvents after ReclaimLeases = %+v, want %s at once", evs, byA[0].Email.ID)
	}
	if evs := claim(again, "a", now.Add(time.Second)); len(evs) != 0 {
		t.Errorf("ClaimEvents again = %+v, want none: b's lease holds", evs)
	}
	// Renewing is for the lease's owner: b's renewal of a's event does
	// nothing, a's own keeps it past the lease's first end.
	if err := other.RenewLease(ctx, evs[0], now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := again.RenewLease(ctx, evs[0], now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := claim(other, "b", now.Add(time.Minute)); len(got) != 1 || got[0].Email.ID != byB[0].Email.ID {
		t.Errorf("ClaimEvents by b a minute on = %+v, want its own event back (its lease ended), not a's renewed one", got)
	}
	if got := claim(other, "b", now.Add(2*time.Minute)); len(got) != 1 || got[0].Email.ID != byA[0].Email.ID {
		t.Errorf("ClaimEvents by b once a's renewed lease ended = %+v, want %s", got, byA[0].Email.ID)
	}
}
