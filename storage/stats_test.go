package storage

import (
	"context"
	"testing"
	"time"
)

func TestStatsOldestAndKeys(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)}
	db := openDB(t, Options{Now: c.Now})
	st, err := db.Stats(context.Background())
	if err != nil || st.Emails != 0 || !st.Oldest.IsZero() || st.Keys != 0 {
		t.Errorf("Stats of an empty file = %+v, %v", st, err)
	}
	first := c.Now()
	c.Advance(time.Minute)
	deliver(t, db, "b1", "bob@x.org")
	c.Advance(-2 * time.Minute) // a clock set back: bob's inbox is not the oldest
	deliver(t, db, "a1", "alice@x.org")
	c.Advance(time.Hour)
	deliver(t, db, "a2", "Alice@x.org", "carol@x.org")
	db.CreateKey(context.Background(), "one")
	db.CreateKey(context.Background(), "two")
	st, err = db.Stats(context.Background())
	if err != nil || st.Emails != 4 || st.Inboxes != 3 || st.Keys != 2 || !st.Oldest.Equal(first.Add(-time.Minute)) {
		t.Errorf("Stats = %+v, %v; want 4 emails, 3 inboxes, 2 keys, oldest %v", st, err, first.Add(-time.Minute))
	}

	ins, err := db.Inboxes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Inbox{
		{"alice", 2, first.Add(-time.Minute + time.Hour)},
		{"bob", 1, first.Add(time.Minute)},
		{"carol", 1, first.Add(-time.Minute + time.Hour)},
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
