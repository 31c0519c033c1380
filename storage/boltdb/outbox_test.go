package boltdb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"burner/storage"

	bolt "go.etcd.io/bbolt"
)

func bucketLen(t *testing.T, db *DB, name []byte) int {
	t.Helper()
	n := 0
	db.bolt.View(func(tx *bolt.Tx) error { n = tx.Bucket(name).Stats().KeyN; return nil })
	return n
}

// TestOutboxSurvivesReopen: what CompleteEvent and RetryEvent decided is
// in the file after Close, and the schedule, attempts included, holds
// after the file is opened again (SPEC §9: the schedule survives a
// restart). The message shared by a delivery's events goes with the last.
func TestOutboxSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "burner.db")
	hooks := []storage.Hook{{ID: "a"}, {ID: "b"}}
	db, err := Open(path, Options{Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("<p>the same paragraph, again and again</p>", 20_000) // 860 kB, compressed once
	msg := &storage.Message{From: "s@x.test", Subject: new("hi"), Body: &big, Raw: []byte("Subject: hi\r\n\r\nhi\r\n")}
	to := []string{"r1@x.test", "r2@x.test", "r3@x.test"}
	if _, err := db.Deliver(ctx, msg, to); err != nil {
		t.Fatal(err)
	}
	if n, m := bucketLen(t, db, bucketEvents), bucketLen(t, db, bucketEventMsgs); n != 6 || m != 1 {
		t.Fatalf("after a delivery to 3 recipients with 2 hooks: %d events and %d shared messages, want 6 and 1", n, m)
	}
	var size int64
	db.bolt.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	if size > 8<<20 {
		t.Errorf("the file is %d bytes after one 860 kB body to 3 recipients and 2 hooks: the events copy it", size)
	}
	now := time.Now().Add(time.Second)
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "a", Now: now, Lease: time.Minute, Max: 10})
	if err != nil || len(evs) != 3 {
		t.Fatalf("ClaimEvents(a) = %d events, %v; want 3", len(evs), err)
	}
	if *evs[0].Email.Body != big {
		t.Errorf("the event's body is %d bytes, want the %d stored", len(*evs[0].Email.Body), len(big))
	}
	next := now.Add(5 * time.Second).Truncate(time.Millisecond)
	for i, e := range evs {
		if i == 0 {
			e.Attempts = 3
			if err := db.RetryEvent(ctx, e, next); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := db.CompleteEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	evs, err = db.ClaimEvents(ctx, storage.Claim{Hook: "b", Now: now, Lease: time.Minute, Max: 10})
	if err != nil || len(evs) != 3 {
		t.Fatalf("ClaimEvents(b) = %d events, %v; want 3", len(evs), err)
	}
	for _, e := range evs {
		db.CompleteEvent(ctx, e)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(path, Options{Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, m := bucketLen(t, db, bucketEvents), bucketLen(t, db, bucketEventMsgs); n != 1 || m != 1 {
		t.Errorf("after a reopen: %d events and %d messages, want the retried one and its message", n, m)
	}
	if evs, _ := db.ClaimEvents(ctx, storage.Claim{Hook: "a", Now: next.Add(-time.Millisecond), Lease: time.Minute, Max: 10}); len(evs) != 0 {
		t.Errorf("after a reopen, ClaimEvents before the stored next attempt = %d events, want none", len(evs))
	}
	evs, err = db.ClaimEvents(ctx, storage.Claim{Hook: "a", Now: next, Lease: time.Minute, Max: 10})
	if err != nil || len(evs) != 1 || evs[0].Attempts != 3 || !evs[0].Next.Equal(next) {
		t.Fatalf("after a reopen, ClaimEvents at the stored next attempt = %+v, %v; want it with 3 attempts", evs, err)
	}
	db.CompleteEvent(ctx, evs[0])
	if err := db.flushOutbox(); err != nil {
		t.Fatal(err)
	}
	if n, m, d := bucketLen(t, db, bucketEvents), bucketLen(t, db, bucketEventMsgs), bucketLen(t, db, bucketEventsDue); n+m+d != 0 {
		t.Errorf("after the last event: %d events, %d messages, %d due keys; want none", n, m, d)
	}
	if rep, err := db.Check(ctx); err != nil || !rep.OK() {
		t.Errorf("Check after webhook traffic = %+v, %v", rep, err)
	}
}

// TestOutboxInlineEvent: the only event of a delivery holds its message
// inline, and is claimed, retried across a reopen and completed as a
// shared one is, even after its email is deleted (SPEC §9).
func TestOutboxInlineEvent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "burner.db")
	hooks := []storage.Hook{{ID: "a"}}
	db, err := Open(path, Options{Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	msg := &storage.Message{From: "s@x.test", FromName: "S", Subject: new("hi"), Body: new("the body"), Raw: []byte("Subject: hi\r\n\r\nthe body\r\n")}
	emails, err := db.Deliver(ctx, msg, []string{"r@x.test"})
	if err != nil {
		t.Fatal(err)
	}
	if n, m := bucketLen(t, db, bucketEvents), bucketLen(t, db, bucketEventMsgs); n != 1 || m != 0 {
		t.Fatalf("after a delivery making one event: %d events and %d shared messages, want 1 and none", n, m)
	}
	if err := db.Delete(ctx, emails[0].ID); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Second)
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "a", Now: now, Lease: time.Minute, Max: 10})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ClaimEvents = %d events, %v; want 1", len(evs), err)
	}
	if e := evs[0].Email; e.ID != emails[0].ID || e.From != "s@x.test" || e.FromName != "S" || *e.Subject != "hi" || *e.Body != "the body" || e.To != "r@x.test" {
		t.Errorf("the inline event's email = %+v, want what was stored", e)
	}
	next := now.Add(5 * time.Second).Truncate(time.Millisecond)
	evs[0].Attempts = 2
	if err := db.RetryEvent(ctx, evs[0], next); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err = db.ClaimEvents(ctx, storage.Claim{Hook: "a", Now: next, Lease: time.Minute, Max: 10})
	if err != nil || len(evs) != 1 || evs[0].Attempts != 2 || *evs[0].Email.Body != "the body" {
		t.Fatalf("after a reopen, ClaimEvents = %+v, %v; want the event with 2 attempts and its body", evs, err)
	}
	db.CompleteEvent(ctx, evs[0])
	if err := db.flushOutbox(); err != nil {
		t.Fatal(err)
	}
	if n, d := bucketLen(t, db, bucketEvents), bucketLen(t, db, bucketEventsDue); n+d != 0 {
		t.Errorf("after the event was sent: %d events and %d due keys, want none", n, d)
	}
}

// TestOpenRefusesBadHooks: hook ids are keys; a bad scope is a mistake.
func TestOpenRefusesBadHooks(t *testing.T) {
	for _, hooks := range [][]storage.Hook{
		{{ID: ""}},
		{{ID: "a\x00b"}},
		{{ID: "a"}, {ID: "a"}},
		{{ID: "a", Scope: storage.Scope{Inboxes: []string{"no*pe"}}}},
	} {
		db, err := Open(filepath.Join(t.TempDir(), "burner.db"), Options{Hooks: hooks})
		if err == nil {
			db.Close()
			t.Errorf("Open with hooks %+v succeeded, want an error", hooks)
		}
	}
}

// TestDeliverWithoutHooksWritesNoEvents: without hooks the outbox stays
// empty, so ingest pays nothing for it.
func TestDeliverWithoutHooksWritesNoEvents(t *testing.T) {
	db := openDB(t, Options{})
	deliver(t, db, "x", "a@x.test")
	if n, m := bucketLen(t, db, bucketEvents), bucketLen(t, db, bucketEventMsgs); n+m != 0 {
		t.Errorf("a delivery without hooks wrote %d events and %d messages", n, m)
	}
}

// BenchmarkOutboxPages reports what a hook adds to each delivery in pages
// and bytes written, which fsync time follows and which, unlike it, does
// not vary with what else the disk is doing. Deliveries run in parallel,
// so that commits are shared as under load.
func BenchmarkOutboxPages(b *testing.B) {
	body := strings.Repeat("<p>a line of a newsletter, with a <a href=\"https://x.test/\">link</a></p>\n", 100)
	for _, tc := range []struct {
		name  string
		hooks []storage.Hook
	}{{"none", nil}, {"hook", []storage.Hook{{ID: "a"}}}} {
		b.Run(tc.name, func(b *testing.B) {
			db := openDB(b, Options{Hooks: tc.hooks})
			msg := &storage.Message{From: "s@x.test", Subject: new("a newsletter"), Body: &body, Text: body, Raw: []byte("Subject: x\r\n\r\n" + body)}
			before := db.bolt.Stats().TxStats
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := db.Deliver(context.Background(), msg, []string{"bench@x.test"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			after := db.bolt.Stats().TxStats
			b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(b.N), "pages/op")
			b.ReportMetric(float64(after.GetPageAlloc()-before.GetPageAlloc())/float64(b.N), "allocB/op")
		})
	}
}
