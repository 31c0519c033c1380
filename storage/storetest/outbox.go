package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"burner/storage"
)

// outboxHooks are the hooks the outbox cases open their stores with: one
// for every inbox, one for the ci-* inboxes.
var outboxHooks = []storage.Hook{{ID: "all"}, {ID: "ci", Scope: storage.Scope{Inboxes: []string{"CI-*"}}}}

// openOutbox opens a store with outboxHooks and the clock clk.
func openOutbox(t *testing.T, open Opener, clk *Clock) storage.Engine {
	t.Helper()
	return open(t, Config{Now: clk.Now, Hooks: outboxHooks})
}

func claim(t *testing.T, ob storage.Outbox, hook string, now time.Time, max int) []storage.Event {
	t.Helper()
	evs, err := ob.ClaimEvents(context.Background(), storage.Claim{Hook: hook, Node: "test", Now: now, Lease: time.Minute, Max: max})
	if err != nil {
		t.Fatalf("ClaimEvents(%s): %v", hook, err)
	}
	return evs
}

func waiting(t *testing.T, ob storage.Outbox) map[string]int {
	t.Helper()
	w, err := ob.Waiting(context.Background())
	if err != nil {
		t.Fatalf("Waiting: %v", err)
	}
	out := make(map[string]int)
	for _, h := range w {
		out[h.Hook] = h.Events
	}
	return out
}

// testOutbox: the events of spec §9, in the commit of their emails: one
// per email and covering hook, carrying the email as stored, leased,
// completed, retried, dropped, and announced.
func testOutbox(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("OnePerEmailAndHook", func(t *testing.T) {
		clk := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		db := openOutbox(t, open, clk)
		emails := deliver(t, db, "build", "CI-7@x.test", "alice@x.test")
		if got, want := waiting(t, db), map[string]int{"all": 2, "ci": 1}; !reflect.DeepEqual(got, want) {
			t.Fatalf("Waiting after a delivery to ci-7 and alice = %v, want %v", got, want)
		}
		evs := claim(t, db, "ci", clk.Now(), 10)
		if len(evs) != 1 {
			t.Fatalf("ClaimEvents(ci) = %d events, want 1", len(evs))
		}
		if e := evs[0]; e.Hook != "ci" || !reflect.DeepEqual(e.Email, emails[0]) || e.Attempts != 0 || !e.Next.Equal(emails[0].ReceivedAt) {
			t.Errorf("ClaimEvents(ci) = %+v,\nwant hook ci, the email %+v as Deliver returned it, no attempt, due at its receivedAt", e, emails[0])
		}
		if evs := claim(t, db, "all", clk.Now(), 1); len(evs) != 1 {
			t.Errorf("ClaimEvents(all, max 1) = %d events, want 1", len(evs))
		}
		if evs := claim(t, db, "all", clk.Now(), 10); len(evs) != 1 {
			t.Errorf("ClaimEvents(all) after claiming one = %d events, want the other one", len(evs))
		}
		if evs := claim(t, db, "all", clk.Now(), 10); len(evs) != 0 {
			t.Errorf("ClaimEvents(all) with both leased = %d events, want none", len(evs))
		}
		// A lease that ends makes the event due again: at least once.
		if evs := claim(t, db, "all", clk.Now().Add(2*time.Minute), 10); len(evs) != 2 {
			t.Errorf("ClaimEvents(all) after the leases ended = %d events, want 2", len(evs))
		}
	})

	t.Run("CompleteAndRetry", func(t *testing.T) {
		clk := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		db := openOutbox(t, open, clk)
		deliver(t, db, "one", "bob@x.test")
		deliver(t, db, "two", "bob@x.test") // received 1 ms after one (spec §3)
		clk.Advance(time.Second)
		evs := claim(t, db, "all", clk.Now(), 10)
		if len(evs) != 2 {
			t.Fatalf("ClaimEvents = %d events, want 2", len(evs))
		}
		done, retried := evs[0], evs[1]
		if err := db.CompleteEvent(ctx, done); err != nil {
			t.Fatalf("CompleteEvent: %v", err)
		}
		retried.Attempts = 1
		next := clk.Now().Add(5 * time.Second)
		if err := db.RetryEvent(ctx, retried, next); err != nil {
			t.Fatalf("RetryEvent: %v", err)
		}
		if got := waiting(t, db); got["all"] != 1 {
			t.Errorf("Waiting after one completed = %v, want all: 1", got)
		}
		if evs := claim(t, db, "all", next.Add(-time.Millisecond), 10); len(evs) != 0 {
			t.Errorf("ClaimEvents before the retry is due = %+v, want none", evs)
		}
		evs = claim(t, db, "all", next, 10)
		if len(evs) != 1 || evs[0].Email.ID != retried.Email.ID || evs[0].Attempts != 1 || !evs[0].Next.Equal(next) {
			t.Fatalf("ClaimEvents when the retry is due = %+v, want %s with 1 attempt, due at %v", evs, retried.Email.ID, next)
		}
		// Completing twice, or an event already gone, is not an error.
		for _, e := range []storage.Event{done, evs[0], evs[0]} {
			if err := db.CompleteEvent(ctx, e); err != nil {
				t.Errorf("CompleteEvent(%s): %v", e.Email.ID, err)
			}
		}
		if err := db.RetryEvent(ctx, done, next); err != nil {
			t.Errorf("RetryEvent of a completed event: %v", err)
		}
		if evs := claim(t, db, "all", next.Add(time.Hour), 10); len(evs) != 0 {
			t.Errorf("ClaimEvents after both completed = %+v, want none", evs)
		}
		if got := waiting(t, db); len(got) != 0 {
			t.Errorf("Waiting after both completed = %v, want nothing", got)
		}
	})

	t.Run("SentAfterDelete", func(t *testing.T) {
		clk := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		db := openOutbox(t, open, clk)
		e := deliver(t, db, "gone", "dave@x.test")[0]
		if err := db.Delete(ctx, e.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Clear(ctx, "dave"); err != nil {
			t.Fatal(err)
		}
		evs := claim(t, db, "all", clk.Now(), 10)
		if len(evs) != 1 || !reflect.DeepEqual(evs[0].Email, e) {
			t.Errorf("ClaimEvents after the email was deleted = %+v, want the email as stored: %+v", evs, e)
		}
	})

	t.Run("DropEvents", func(t *testing.T) {
		clk := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		db := openOutbox(t, open, clk)
		old := deliver(t, db, "old", "ci-1@x.test", "erin@x.test")
		clk.Advance(time.Hour)
		deliver(t, db, "new", "ci-1@x.test")
		// A completed event is gone, not dropped: it is not counted.
		done := claim(t, db, "ci", old[0].ReceivedAt, 10)
		if len(done) != 1 {
			t.Fatalf("ClaimEvents(ci) = %d events, want the old one", len(done))
		}
		if err := db.CompleteEvent(ctx, done[0]); err != nil {
			t.Fatal(err)
		}
		got, err := db.DropEvents(ctx, old[0].ReceivedAt.Add(time.Millisecond))
		if want := map[string]int{"all": 2}; err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("DropEvents(older than the first delivery) = %v, %v; want %v", got, err, want)
		}
		w, err := db.Waiting(ctx)
		if err != nil || len(w) != 2 {
			t.Fatalf("Waiting after the drop = %+v, %v; want the newer email's two events", w, err)
		}
		for _, h := range w {
			if h.Events != 1 || !h.Oldest.Equal(clk.Now().UTC().Truncate(time.Millisecond)) {
				t.Errorf("Waiting for %s = %d events, oldest %v; want 1, received at %v", h.Hook, h.Events, h.Oldest, clk.Now())
			}
		}
	})

	t.Run("EventsAdded", func(t *testing.T) {
		clk := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		db := openOutbox(t, open, clk)
		ci, all := db.EventsAdded("ci"), db.EventsAdded("all")
		deliver(t, db, "not ci", "frank@x.test")
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Fatal("EventsAdded(all) not closed within 10s of a delivery")
		}
		select {
		case <-ci:
			t.Error("EventsAdded(ci) closed by a delivery to an inbox ci does not cover")
		default:
		}
		deliver(t, db, "ci", "ci-9@x.test")
		select {
		case <-ci:
		case <-time.After(10 * time.Second):
			t.Fatal("EventsAdded(ci) not closed within 10s of a delivery to ci-9")
		}
	})
}
