package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/postgres"
	"burner/storage/storetest"
)

// TestRecentInboxesGroups: when the newest emails a round of the walk
// reads are in fewer inboxes than asked for (a busy inbox), RecentInboxes
// walks on past the inboxes it met, and after its last round groups every
// email instead; either way it answers what one long walk answers.
func TestRecentInboxesGroups(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := openDB(t, testDatabase(t), postgres.Options{Now: clk.Now})
	send := func(to string) {
		clk.Advance(time.Minute)
		if _, err := db.Deliver(ctx, &storage.Message{From: "s@x.test", Raw: []byte("\r\n")}, []string{to}); err != nil {
			t.Fatal(err)
		}
	}
	send("quiet-1@x.test")
	send("quiet-2@x.test")
	for range 4 {
		send("busy@x.test")
	}
	for _, q := range []storage.InboxQuery{{Limit: 2}, {Limit: 3}, {Limit: 10}, {Prefix: "quiet", Limit: 1}, {Patterns: []string{"quiet-*"}, Limit: 5}} {
		postgres.SetRecentWalk(db, 0)
		walked, err := db.RecentInboxes(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		// 2: the newest two are busy's, and rounds go on past it; 1: three
		// rounds find three inboxes at most, then every email is grouped.
		for _, n := range []int{2, 1} {
			postgres.SetRecentWalk(db, n)
			short, err := db.RecentInboxes(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(walked, short) || len(walked) == 0 {
				t.Errorf("RecentInboxes(%+v) in rounds of %d = %+v, in one walk = %+v; want them alike", q, n, short, walked)
			}
		}
	}
	postgres.SetRecentWalk(db, 0)
	got, _ := db.RecentInboxes(ctx, storage.InboxQuery{Limit: 2})
	if len(got) != 2 || got[0].Name != "busy" || got[0].Emails != 4 || got[1].Name != "quiet-2" || got[1].Emails != 1 {
		t.Errorf("RecentInboxes(limit 2) = %+v; want busy (4), then quiet-2 (1)", got)
	}
}
