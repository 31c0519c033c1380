package boltdb

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// outboxLen counts the keys of the outbox buckets by kind: event records
// never retried and retried, due keys, and messages.
type outboxCount struct{ new, retried, due, msgs int }

func outboxLen(t *testing.T, db *DB) outboxCount {
	t.Helper()
	var c outboxCount
	db.bolt.View(func(tx *bolt.Tx) error {
		count := func(k, _ []byte) error {
			i := bytes.IndexByte(k, 0)
			switch {
			case i == 0:
				c.msgs++
			case k[i+1] == kindNew:
				c.new++
			case k[i+1] == kindRetry:
				c.retried++
			case k[i+1] == kindDue:
				c.due++
			default:
				t.Errorf("outbox key %x of no known kind", k)
			}
			return nil
		}
		tx.Bucket(bucketOutbox).ForEach(count)
		return tx.Bucket(bucketOutboxNew).ForEach(count)
	})
	return c
}

// TestOutboxSurvivesReopen: what CompleteEvent and RetryEvent decided is
// in the file after Close, and the schedule, attempts included, holds
// after the file is opened again (spec §9: the schedule survives a
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
	if c := outboxLen(t, db); c.new != 6 || c.msgs != 1 || c.retried+c.due != 0 {
		t.Fatalf("after a delivery to 3 recipients with 2 hooks: %+v, want 6 new events and 1 shared message", c)
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
	if c := outboxLen(t, db); c != (outboxCount{retried: 1, due: 1, msgs: 1}) {
		t.Errorf("after a reopen: %+v, want the retried event, its due key and its message", c)
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
	if c := outboxLen(t, db); c != (outboxCount{}) {
		t.Errorf("after the last event: %+v; want nothing", c)
	}
	if rep, err := db.Check(ctx); err != nil || !rep.OK() {
		t.Errorf("Check after webhook traffic = %+v, %v", rep, err)
	}
}

// TestOutboxInlineEvent: the only event of a delivery holds its message
// inline, and is claimed, retried across a reopen and completed as a
// shared one is, even after its email is deleted (spec §9).
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
	if c := outboxLen(t, db); c != (outboxCount{new: 1}) {
		t.Fatalf("after a delivery making one event: %+v, want 1 new event and no shared message", c)
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
	if c := outboxLen(t, db); c != (outboxCount{}) {
		t.Errorf("after the event was sent: %+v, want nothing", c)
	}
}

// stagedLen returns how many keys outboxnew holds, and whether it is
// inline, in the root page.
func stagedLen(t *testing.T, db *DB) (n int, inline bool) {
	t.Helper()
	db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutboxNew)
		n, inline = b.Stats().KeyN, b.RootPage() == 0
		return nil
	})
	return n, inline
}

// TestOutboxStaged: the newest events wait in outboxnew, inline in the
// root page, until it is full, and then move to the outbox; wherever
// they are, they are claimed, counted, retried and completed alike, and
// a shared message stays readable when its event moves without it. An
// event too big for outboxnew goes straight to the outbox.
func TestOutboxStaged(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, Options{Hooks: []storage.Hook{{ID: "ci", Scope: storage.Scope{Inboxes: []string{"ci-*"}}}}})
	// Mail no hook covers, so that the mail buckets outgrow the root page.
	for range 40 {
		deliver(t, db, strings.Repeat("warm ", 40), "warm@x.test")
	}
	first := deliver(t, db, "one", "ci-1@x.test")[0]
	if n, inline := stagedLen(t, db); n != 1 || !inline {
		t.Fatalf("after one small event: outboxnew holds %d keys, inline %v; want 1, inline", n, inline)
	}
	moved := false
	const small = 30
	for i := range small - 1 {
		deliver(t, db, "more", fmt.Sprintf("ci-%d@x.test", i+2))
		if n, inline := stagedLen(t, db); !inline {
			t.Fatalf("outboxnew holds %d keys and is not inline", n)
		} else if c := outboxLen(t, db); c.new != i+2 {
			t.Fatalf("after %d events: %+v", i+2, c)
		} else if n < c.new {
			moved = true
		}
	}
	if !moved {
		t.Fatalf("after %d small events outboxnew holds them all: it never moved them to the outbox", small)
	}
	shared := deliver(t, db, "shared", "ci-a@x.test", "ci-b@x.test")
	w, err := db.Waiting(ctx)
	if err != nil || len(w) != 1 || w[0].Events != small+2 || !w[0].Oldest.Equal(first.ReceivedAt) {
		t.Fatalf("Waiting = %+v, %v; want %d events of ci, the oldest at %v", w, err, small+2, first.ReceivedAt)
	}
	now := time.Now().Add(time.Second)
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "ci", Now: now, Lease: time.Hour, Max: 100})
	if err != nil || len(evs) != small+2 {
		t.Fatalf("ClaimEvents = %d events, %v; want %d", len(evs), err, small+2)
	}
	seen := make(map[string]bool)
	for _, e := range evs {
		seen[e.Email.ID] = true
	}
	if len(seen) != small+2 || !seen[first.ID] || !seen[shared[0].ID] || !seen[shared[1].ID] {
		t.Fatalf("ClaimEvents returned %d distinct emails, want %d, the first and the shared ones among them", len(seen), small+2)
	}
	// One of the shared message's events fails: it moves to the retried
	// events of the outbox, its message maybe staying in outboxnew.
	next := now.Add(time.Minute).Truncate(time.Millisecond)
	for _, e := range evs {
		if e.Email.ID == shared[0].ID {
			e.Attempts = 1
			if err := db.RetryEvent(ctx, e, next); err != nil {
				t.Fatal(err)
			}
		} else if e.Email.ID != shared[1].ID {
			db.CompleteEvent(ctx, e)
		}
	}
	if err := db.flushOutbox(); err != nil {
		t.Fatal(err)
	}
	if c := outboxLen(t, db); c != (outboxCount{new: 1, retried: 1, due: 1, msgs: 1}) {
		t.Errorf("after all but the shared events were sent, one retried: %+v", c)
	}
	evs, err = db.ClaimEvents(ctx, storage.Claim{Hook: "ci", Now: next, Lease: time.Hour, Max: 100})
	if err != nil || len(evs) != 1 || evs[0].Email.ID != shared[0].ID || evs[0].Attempts != 1 || *evs[0].Email.Body != "<p>shared</p>" {
		t.Fatalf("ClaimEvents at the retry = %+v, %v; want the retried shared event with its body", evs, err)
	}
	db.CompleteEvent(ctx, evs[0])
	db.CompleteEvent(ctx, storage.Event{Hook: "ci", Email: shared[1]})
	if err := db.flushOutbox(); err != nil {
		t.Fatal(err)
	}
	if c := outboxLen(t, db); c != (outboxCount{}) {
		t.Errorf("after every event was sent: %+v, want nothing", c)
	}

	// A body that does not compress makes an event bigger than outboxnew.
	big := make([]byte, 3000)
	rand.Read(big)
	body := base64.StdEncoding.EncodeToString(big)
	if _, err := db.Deliver(ctx, &storage.Message{From: "s@x.test", Body: &body, Raw: []byte("\r\n" + body)}, []string{"ci-big@x.test"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := stagedLen(t, db); n != 0 || outboxLen(t, db).new != 1 {
		t.Errorf("a big event: outboxnew holds %d keys, the outboxes %+v; want it in the outbox", n, outboxLen(t, db))
	}
	if evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "ci", Now: time.Now().Add(time.Second), Lease: time.Hour, Max: 10}); err != nil || len(evs) != 1 || *evs[0].Email.Body != body {
		t.Errorf("ClaimEvents of the big event = %d events, %v; want it with its body", len(evs), err)
	}
}

// TestStagedRoomKeepsRootPage: outboxnew gets no room when the inline
// buckets of the root page leave it too little, so that the root page
// never splits for it.
func TestStagedRoomKeepsRootPage(t *testing.T) {
	db := openDB(t, Options{})
	for range 40 {
		deliver(t, db, strings.Repeat("warm ", 40), "warm@x.test")
	}
	page := db.bolt.Info().PageSize
	errRollback := errors.New("rollback")
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		if room := stagedRoom(tx); room < page/8 {
			t.Errorf("stagedRoom of a file with little in its root page = %d, want at least %d", room, page/8)
		}
		for i := range 3 {
			b, err := tx.CreateBucket([]byte(fmt.Sprintf("extra%d", i)))
			if err != nil {
				return err
			}
			if err := b.Put([]byte("k"), make([]byte, page/4-64)); err != nil {
				return err
			}
		}
		if room := stagedRoom(tx); room != 0 {
			t.Errorf("stagedRoom with three nearly full inline buckets = %d, want 0", room)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
}

// TestOutboxDropAcrossRanges: DropEvents finds the expired events wherever
// they wait, never retried or retried, in the outbox or in outboxnew, and
// keeps the others.
func TestOutboxDropAcrossRanges(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(-time.Hour)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }
	db := openDB(t, Options{Now: clock, Hooks: []storage.Hook{{ID: "h", Scope: storage.Scope{Inboxes: []string{"h-*"}}}}})
	for range 40 {
		deliver(t, db, strings.Repeat("warm ", 40), "warm@x.test")
	}
	const n = 12
	for i := range n {
		set(t0.Add(time.Duration(i) * time.Second))
		deliver(t, db, "ev", fmt.Sprintf("h-%d@x.test", i))
	}
	if staged, _ := stagedLen(t, db); staged < 2 || staged == n {
		t.Fatalf("outboxnew holds %d of %d events; the test wants some in the outbox, and two in it", staged, n)
	}
	// The two oldest fail once and wait for a retry in an hour.
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "h", Now: t0.Add(time.Second), Lease: time.Minute, Max: 2})
	if err != nil || len(evs) != 2 {
		t.Fatalf("ClaimEvents = %d events, %v; want 2", len(evs), err)
	}
	for _, e := range evs {
		e.Attempts = 1
		db.RetryEvent(ctx, e, t0.Add(time.Hour))
	}
	if err := db.flushOutbox(); err != nil {
		t.Fatal(err)
	}
	if c := outboxLen(t, db); c.retried != 2 || c.new != n-2 {
		t.Fatalf("after two retries: %+v", c)
	}
	// All but the newest go, some of them from outboxnew.
	last := t0.Add((n - 1) * time.Second)
	dropped, err := db.DropEvents(ctx, last)
	if err != nil || dropped["h"] != n-1 || len(dropped) != 1 {
		t.Errorf("DropEvents = %v, %v; want %d of hook h", dropped, err, n-1)
	}
	w, err := db.Waiting(ctx)
	if err != nil || len(w) != 1 || w[0].Events != 1 || !w[0].Oldest.Equal(last) {
		t.Errorf("Waiting after the drop = %+v, %v; want the newest event, at %v", w, err, last)
	}
	if c := outboxLen(t, db); c != (outboxCount{new: 1}) {
		t.Errorf("after the drop: %+v, want the newest event alone", c)
	}
	if evs, _ := db.ClaimEvents(ctx, storage.Claim{Hook: "h", Now: t0.Add(time.Hour), Lease: time.Minute, Max: 100}); len(evs) != 1 || !evs[0].Email.ReceivedAt.Equal(last) {
		t.Errorf("ClaimEvents after the drop = %+v, want the newest event", evs)
	}
}

// TestOutboxFlushesEarly: every outboxFlushOps outcomes wake the flusher
// before its second is over.
func TestOutboxFlushesEarly(t *testing.T) {
	ctx := context.Background()
	db := &DB{} // settle keeps outcomes in memory only
	for i := range outboxFlushOps {
		if len(db.outbox.full) != 0 {
			t.Fatalf("the flusher was woken after %d outcomes, want %d", i, outboxFlushOps)
		}
		e := storage.Event{Hook: "h", Email: storage.Email{ID: record.NewID().String(), ReceivedAt: time.Now()}}
		if err := db.CompleteEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if len(db.outbox.full) != 1 {
		t.Errorf("after %d outcomes the flusher was not woken", outboxFlushOps)
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
	if c := outboxLen(t, db); c != (outboxCount{}) {
		t.Errorf("a delivery without hooks wrote %+v", c)
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
