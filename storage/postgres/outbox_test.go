package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/postgres"

	"github.com/jackc/pgx/v5"
)

var outboxHooks = []storage.Hook{{ID: "all"}}

// TestOutboxTwoNodes: two nodes on one database share one outbox (spec
// §9, §10). Each event is claimed and completed by exactly one of them,
// never by both at the same moment; a delivery on one wakes the other's
// worker; and an event claimed by a node that dies is the other's once
// the lease is over.
func TestOutboxTwoNodes(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	a := openDB(t, dbURL, postgres.Options{Hooks: outboxHooks})
	b := openDB(t, dbURL, postgres.Options{Hooks: outboxHooks})

	woken := b.EventsAdded("all")
	const n = 60
	var want []string
	for i := range n {
		node := a
		if i%2 == 1 {
			node = b
		}
		want = append(want, deliverTo(t, node, fmt.Sprint("m", i), fmt.Sprintf("box%d@x.test", i%5))[0].ID)
	}
	waitClosed(t, woken, 5*time.Second, "EventsAdded(all) on B after a delivery on A")

	var (
		mu        sync.Mutex
		inFlight  = make(map[string]string) // email id -> the node sending it
		delivered = make(map[string][]string)
		errs      []string
	)
	worker := func(name string, ob storage.Outbox) {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			done := len(delivered) == n
			mu.Unlock()
			if done {
				return
			}
			evs, err := ob.ClaimEvents(ctx, storage.Claim{Hook: "all", Node: name, Now: time.Now(), Lease: time.Minute, Max: 3})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s: ClaimEvents: %v", name, err))
				mu.Unlock()
				return
			}
			for _, e := range evs {
				mu.Lock()
				if other, ok := inFlight[e.Email.ID]; ok {
					errs = append(errs, fmt.Sprintf("%s claimed %s while %s was sending it", name, e.Email.ID, other))
				}
				inFlight[e.Email.ID] = name
				mu.Unlock()
			}
			for _, e := range evs {
				mu.Lock()
				delete(inFlight, e.Email.ID)
				delivered[e.Email.ID] = append(delivered[e.Email.ID], name)
				mu.Unlock()
				if err := ob.CompleteEvent(ctx, e); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("%s: CompleteEvent: %v", name, err))
					mu.Unlock()
				}
			}
		}
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { worker(fmt.Sprint("A", i), a) })
		wg.Go(func() { worker(fmt.Sprint("B", i), b) })
	}
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	for _, id := range want {
		if got := delivered[id]; len(got) != 1 {
			t.Errorf("event of %s delivered by %v, want exactly one node", id, got)
		}
	}
	if w, err := a.Waiting(ctx); err != nil || len(w) != 0 {
		t.Errorf("Waiting after every event completed = %+v, %v; want nothing", w, err)
	}

	// A dies holding a lease: B cannot take the event before the lease
	// ends, and takes it after.
	e := deliverTo(t, a, "orphan", "dead@x.test")[0]
	t0 := time.Now()
	held, err := a.ClaimEvents(ctx, storage.Claim{Hook: "all", Node: "A", Now: t0, Lease: 2 * time.Second, Max: 10})
	if err != nil || len(held) != 1 || held[0].Email.ID != e.ID {
		t.Fatalf("ClaimEvents on A = %+v, %v; want the event of %s", held, err, e.ID)
	}
	if evs, err := b.ClaimEvents(ctx, storage.Claim{Hook: "all", Node: "B", Now: t0.Add(time.Second), Lease: time.Minute, Max: 10}); err != nil || len(evs) != 0 {
		t.Fatalf("ClaimEvents on B during A's lease = %+v, %v; want none", evs, err)
	}
	taken, err := b.ClaimEvents(ctx, storage.Claim{Hook: "all", Node: "B", Now: t0.Add(2 * time.Second), Lease: time.Minute, Max: 10})
	if err != nil || len(taken) != 1 || taken[0].Email.ID != e.ID || taken[0].Email.Subject == nil || *taken[0].Email.Subject != "orphan" {
		t.Fatalf("ClaimEvents on B after A's lease ended = %+v, %v; want the event of %s", taken, err, e.ID)
	}
	// A comes back and records a failure: the event is B's now, and A
	// must not end B's lease.
	stale := held[0]
	stale.Attempts = 1
	if err := a.RetryEvent(ctx, stale, t0); err != nil {
		t.Fatal(err)
	}
	if evs, err := a.ClaimEvents(ctx, storage.Claim{Hook: "all", Node: "A", Now: t0.Add(3 * time.Second), Lease: time.Minute, Max: 10}); err != nil || len(evs) != 0 {
		t.Errorf("ClaimEvents on A after its stale retry, during B's lease = %+v, %v; want none", evs, err)
	}
	if err := b.CompleteEvent(ctx, taken[0]); err != nil {
		t.Fatal(err)
	}
	if w, err := b.Waiting(ctx); err != nil || len(w) != 0 {
		t.Errorf("Waiting after B completed the orphan = %+v, %v; want nothing", w, err)
	}
}

// TestOutboxMessageShared: the events of one message to several
// recipients and hooks share one stored message, which goes with the
// last of them, whether completed or dropped.
func TestOutboxMessageShared(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	db := openDB(t, dbURL, postgres.Options{Hooks: []storage.Hook{{ID: "all"}, {ID: "ci", Scope: storage.Scope{Inboxes: []string{"ci-*"}}}}})
	es := deliverTo(t, db, "shared", "ci-1@x.test", "ci-2@x.test", "other@x.test")
	if w, err := db.Waiting(ctx); err != nil || len(w) != 2 || w[0].Hook != "all" || w[0].Events != 3 || w[1].Hook != "ci" || w[1].Events != 2 {
		t.Fatalf("Waiting = %+v, %v; want all: 3, ci: 2", w, err)
	}
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "ci", Node: "n", Now: time.Now(), Lease: time.Minute, Max: 10})
	if err != nil || len(evs) != 2 {
		t.Fatalf("ClaimEvents(ci) = %+v, %v", evs, err)
	}
	for _, e := range evs {
		if err := db.CompleteEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	messages := func() int {
		var n int
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM event_messages`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := messages(); got != 1 {
		t.Errorf("event_messages after the ci events completed = %d rows, want 1: the all events still need it", got)
	}
	dropped, err := db.DropEvents(ctx, es[0].ReceivedAt.Add(time.Millisecond))
	if err != nil || dropped["all"] != 3 || len(dropped) != 1 {
		t.Errorf("DropEvents = %v, %v; want all: 3", dropped, err)
	}
	if got := messages(); got != 0 {
		t.Errorf("event_messages after every event went = %d rows, want 0", got)
	}
}
