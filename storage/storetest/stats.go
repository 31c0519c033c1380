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

// testRecentInboxes: RecentInboxes lists the inboxes whose newest email is
// newest first (then by name), with counts, at most Limit; Prefix (any
// case) and Patterns (a scope's) narrow it; deleting an inbox's newest
// email moves it back, and an inbox cleared is gone.
func testRecentInboxes(t *testing.T, open Opener) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := NewClock(t0)
	db := open(t, Config{Now: clk.Now})
	if got, err := db.RecentInboxes(ctx, storage.InboxQuery{Limit: 50}); err != nil || len(got) != 0 {
		t.Fatalf("RecentInboxes of an empty store = %+v, %v; want none", got, err)
	}
	at := func(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }
	step := func(minutes int) { clk.Advance(at(minutes).Sub(clk.Now())) }
	step(1)
	deliver(t, db, "a1", "alice@x.org", "CI-7@x.org")
	step(2)
	bobOld := deliver(t, db, "b1", "bob@x.org")
	step(3)
	deliver(t, db, "c1", "ci-8@x.org", "pytest-3f9a@x.org") // a tie: by name
	step(4)
	deliver(t, db, "a2", "Alice@x.org")
	step(5)
	bobNew := deliver(t, db, "b2", "bob@x.org")
	step(6)
	deliver(t, db, "p1", "pytest-0001@x.org")

	check := func(what string, q storage.InboxQuery, want ...storage.Inbox) {
		t.Helper()
		got, err := db.RecentInboxes(ctx, q)
		if err != nil {
			t.Fatalf("%s: RecentInboxes(%+v): %v", what, q, err)
		}
		same := len(got) == len(want)
		for i := 0; same && i < len(got); i++ {
			same = got[i].Name == want[i].Name && got[i].Emails == want[i].Emails && got[i].Newest.Equal(want[i].Newest)
		}
		if !same {
			t.Errorf("%s: RecentInboxes(%+v) =\n%+v\nwant\n%+v", what, q, got, want)
		}
	}
	in := func(name string, n, minutes int) storage.Inbox {
		return storage.Inbox{Name: name, Emails: n, Newest: at(minutes)}
	}
	check("all", storage.InboxQuery{},
		in("pytest-0001", 1, 6), in("bob", 2, 5), in("alice", 2, 4), in("ci-8", 1, 3), in("pytest-3f9a", 1, 3), in("ci-7", 1, 1))
	check("limit", storage.InboxQuery{Limit: 3}, in("pytest-0001", 1, 6), in("bob", 2, 5), in("alice", 2, 4))
	check("limit at a tie", storage.InboxQuery{Limit: 4}, in("pytest-0001", 1, 6), in("bob", 2, 5), in("alice", 2, 4), in("ci-8", 1, 3))
	check("prefix", storage.InboxQuery{Prefix: "PyTest-", Limit: 50}, in("pytest-0001", 1, 6), in("pytest-3f9a", 1, 3))
	check("prefix and limit", storage.InboxQuery{Prefix: "pytest-", Limit: 1}, in("pytest-0001", 1, 6))
	check("no such prefix", storage.InboxQuery{Prefix: "zz", Limit: 50})
	check("a prefix that is no local part", storage.InboxQuery{Prefix: "%_\\'", Limit: 50})
	check("patterns", storage.InboxQuery{Patterns: []string{"ci-*", "alice"}, Limit: 50}, in("alice", 2, 4), in("ci-8", 1, 3), in("ci-7", 1, 1))
	check("patterns and prefix", storage.InboxQuery{Patterns: []string{"ci-*", "alice"}, Prefix: "ci-7", Limit: 50}, in("ci-7", 1, 1))
	check("an exact pattern is no prefix", storage.InboxQuery{Patterns: []string{"ci"}, Limit: 50})
	check("the star pattern", storage.InboxQuery{Patterns: []string{"*"}, Limit: 2}, in("pytest-0001", 1, 6), in("bob", 2, 5))

	// bob's newest goes: bob falls back to its older one.
	if err := db.Delete(ctx, bobNew[0].ID); err != nil {
		t.Fatal(err)
	}
	check("after deleting bob's newest", storage.InboxQuery{Limit: 3}, in("pytest-0001", 1, 6), in("alice", 2, 4), in("ci-8", 1, 3))
	check("bob alone", storage.InboxQuery{Prefix: "bob"}, in("bob", 1, 2))
	if err := db.Delete(ctx, bobOld[0].ID); err != nil {
		t.Fatal(err)
	}
	check("bob empty", storage.InboxQuery{Prefix: "bob"})
	if _, err := db.Clear(ctx, "PYTEST-0001"); err != nil {
		t.Fatal(err)
	}
	step(7)
	deliver(t, db, "a3", "alice@x.org")
	check("after a clear and a delivery", storage.InboxQuery{Limit: 2}, in("alice", 3, 7), in("ci-8", 1, 3))
	// What Inboxes says of each inbox, RecentInboxes says too.
	all, err := db.Inboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recent, err := db.RecentInboxes(ctx, storage.InboxQuery{})
	if err != nil || len(recent) != len(all) {
		t.Fatalf("RecentInboxes() = %+v, %v; want the %d inboxes of Inboxes", recent, err, len(all))
	}
	for _, a := range all {
		found := false
		for _, r := range recent {
			found = found || r.Name == a.Name && r.Emails == a.Emails && r.Newest.Equal(a.Newest)
		}
		if !found {
			t.Errorf("Inboxes has %+v, which RecentInboxes lacks: %+v", a, recent)
		}
	}
}
