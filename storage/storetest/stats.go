package storetest

import (
	"context"
	"testing"
	"time"

	"burner/storage"
)

// testStatsOldestAcrossInboxes: Stats finds the oldest email of all
// inboxes, not of the first one, when the clock was set back between
// inboxes, and Inboxes gives each inbox, by name, its count and newest.
func testStatsOldestAcrossInboxes(t *testing.T, open Opener) {
	ctx := context.Background()
	first := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	clk := NewClock(first)
	db := open(t, Config{Now: clk.Now})
	clk.Advance(time.Minute)
	deliver(t, db, "b1", "bob@x.org")
	clk.Advance(-2 * time.Minute) // set back: bob's inbox is not the oldest
	deliver(t, db, "a1", "alice@x.org")
	clk.Advance(time.Hour)
	deliver(t, db, "a2", "Alice@x.org", "carol@x.org")
	st, err := db.Stats(ctx)
	if err != nil || st.Emails != 4 || st.Inboxes != 3 || !st.Oldest.Equal(first.Add(-time.Minute)) {
		t.Errorf("Stats = %+v, %v; want 4 emails, 3 inboxes, oldest %v", st, err, first.Add(-time.Minute))
	}
	ins, err := db.Inboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.Inbox{
		{Name: "alice", Emails: 2, Newest: first.Add(-time.Minute + time.Hour)},
		{Name: "bob", Emails: 1, Newest: first.Add(time.Minute)},
		{Name: "carol", Emails: 1, Newest: first.Add(-time.Minute + time.Hour)},
	}
	if len(ins) != len(want) {
		t.Fatalf("Inboxes = %+v, want %+v", ins, want)
	}
	for i := range want {
		if ins[i].Name != want[i].Name || ins[i].Emails != want[i].Emails || !ins[i].Newest.Equal(want[i].Newest) {
			t.Errorf("Inboxes[%d] = %+v, want %+v", i, ins[i], want[i])
		}
	}
}
