package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/postgres"

	"github.com/jackc/pgx/v5"
)

func ptr(s string) *string { return &s }

func deliverTo(t testing.TB, db storage.Engine, subject string, to ...string) []storage.Email {
	t.Helper()
	msg := &storage.Message{From: "s@example.net", Subject: ptr(subject), Text: subject, Raw: []byte("Subject: " + subject + "\r\n\r\nhi\r\n")}
	es, err := db.Deliver(context.Background(), msg, to)
	if err != nil {
		t.Fatalf("Deliver(%q): %v", to, err)
	}
	return es
}

// waitClosed fails t unless ch is closed within d.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not woken within %v", what, d)
	}
}

// TestTwoNodes: two nodes on one database see each other's deliveries,
// wake each other's waiters, and share keys (spec §10).
func TestTwoNodes(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	a := openDB(t, dbURL, postgres.Options{})
	b := openDB(t, dbURL, postgres.Options{})

	waiting, other := b.Changed("Shared"), b.Changed("other")
	sent := deliverTo(t, a, "hello", "shared@x.org")[0]
	waitClosed(t, waiting, 5*time.Second, "Changed(shared) on B after a delivery on A")
	select {
	case <-other:
		t.Error("Changed(other) on B woken by a delivery to shared")
	default:
	}
	got, err := b.List(ctx, storage.Query{LocalPart: "shared"})
	if err != nil || len(got) != 1 || got[0].ID != sent.ID || !got[0].ReceivedAt.Equal(sent.ReceivedAt) {
		t.Errorf("List(shared) on B = %+v, %v; want the email A stored, %+v", got, err, sent)
	}

	k, secret, err := a.CreateKey(ctx, "ci", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Authenticate(ctx, secret); err != nil || got.ID != k.ID {
		t.Errorf("Authenticate on B of a key made on A = %+v, %v", got, err)
	}
	if _, err := a.RevokeKey(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, secret); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Authenticate on B right after a revocation on A: %v, want ErrNotFound", err)
	}
}

// TestTwoNodesAuth: a verdict stored on one node wakes the waiters of
// the other, of each copy of its message (spec §12: any node answers, and
// a wait wakes when the verdict lands), and is read there.
func TestTwoNodesAuth(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	a := openDB(t, dbURL, postgres.Options{})
	b := openDB(t, dbURL, postgres.Options{})
	pending := storage.AuthResult{Status: storage.AuthPending}
	es, err := a.Deliver(ctx, &storage.Message{From: "s@x.org", Raw: []byte("x"), Auth: &pending}, []string{"one@x.org", "two@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	other := deliverTo(t, a, "other", "three@x.org")[0]
	waiting := []<-chan struct{}{b.AuthChanged(es[0].ID), b.AuthChanged(es[1].ID)}
	unrelated := b.AuthChanged(other.ID)
	done := storage.AuthResult{Status: storage.AuthDone, SPF: storage.SPFResult{Result: storage.AuthNone}}
	if err := a.PutAuth(ctx, []string{es[0].ID, es[1].ID}, done); err != nil {
		t.Fatal(err)
	}
	for i, ch := range waiting {
		waitClosed(t, ch, 5*time.Second, fmt.Sprintf("AuthChanged(%s) on B after PutAuth on A", es[i].To))
	}
	select {
	case <-unrelated:
		t.Error("AuthChanged of another message on B woken")
	default:
	}
	if r, err := b.Auth(ctx, es[1].ID); err != nil || r.Status != storage.AuthDone || r.SPF.Result != storage.AuthNone {
		t.Errorf("Auth on B after PutAuth on A = %+v, %v; want the verdict", r, err)
	}
}

// TestTwoNodesOneInbox: deliveries from two nodes to one inbox on a
// frozen clock get distinct receivedAt, and the per-inbox cap holds
// exactly.
func TestTwoNodesOneInbox(t *testing.T) {
	dbURL := testDatabase(t)
	frozen := func() time.Time { return time.Unix(1_700_000_000, 0) }
	const limit = 50
	nodes := []*postgres.DB{
		openDB(t, dbURL, postgres.Options{Now: frozen, Retention: storage.Retention{MaxPerInbox: limit}}),
		openDB(t, dbURL, postgres.Options{Now: frozen, Retention: storage.Retention{MaxPerInbox: limit}}),
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		times []time.Time
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				msg := &storage.Message{Subject: ptr(fmt.Sprint(w, "-", i)), Raw: []byte("x")}
				es, err := nodes[w%2].Deliver(context.Background(), msg, []string{"one@x.org"})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				times = append(times, es[0].ReceivedAt)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := 1; i < len(times); i++ {
		if !times[i].After(times[i-1]) {
			t.Fatalf("two deliveries to one inbox from two nodes got receivedAt %v", times[i])
		}
	}
	got, err := nodes[1].List(context.Background(), storage.Query{LocalPart: "one"})
	if err != nil || len(got) != limit {
		t.Fatalf("List(one) = %d emails, %v; want the cap, %d", len(got), err, limit)
	}
	if want := times[len(times)-limit:]; !got[len(got)-1].ReceivedAt.Equal(want[0]) || !got[0].ReceivedAt.Equal(want[limit-1]) {
		t.Errorf("List(one) holds %v..%v, want the newest %d, %v..%v", got[len(got)-1].ReceivedAt, got[0].ReceivedAt, limit, want[0], want[limit-1])
	}
}

// TestSweepOneNodeAtATime: while one node sweeps, another's Sweep does
// nothing; and Sweep forgets the lock rows of empty inboxes.
func TestSweepOneNodeAtATime(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	clk := time.Unix(1_700_000_000, 0)
	a := openDB(t, dbURL, postgres.Options{Now: func() time.Time { return clk }, Retention: storage.Retention{MaxAge: time.Hour}})
	deliverTo(t, a, "old", "gone@x.org")
	clk = clk.Add(2 * time.Hour)
	b := openDB(t, dbURL, postgres.Options{Now: func() time.Time { return clk }, Retention: storage.Retention{MaxAge: time.Hour}})

	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// Hold the sweep lock as a sweeping node would.
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(0x6275726e00000002)); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Sweep(ctx); err != nil || n != 0 {
		t.Errorf("Sweep while another node sweeps = %d, %v; want 0, nil", n, err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(0x6275726e00000002)); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Sweep(ctx); err != nil || n != 1 {
		t.Errorf("Sweep = %d, %v; want the 1 old email", n, err)
	}
	var inboxes, messages int
	if err := admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM inboxes), (SELECT count(*) FROM messages)`).Scan(&inboxes, &messages); err != nil || inboxes != 0 || messages != 0 {
		t.Errorf("after Sweep: %d inbox rows, %d messages, %v; want none", inboxes, messages, err)
	}
}

// TestWakeAcrossNodesManyInboxes: a commit to more inboxes than a
// notification's payload can name still wakes their waiters on another
// node (it wakes every waiter there).
func TestWakeAcrossNodesManyInboxes(t *testing.T) {
	dbURL := testDatabase(t)
	a, b := openDB(t, dbURL, postgres.Options{}), openDB(t, dbURL, postgres.Options{})
	var to []string
	for i := range 200 {
		to = append(to, fmt.Sprintf("%060d@x.org", i))
	}
	waiting := b.Changed(storage.LocalPart(to[199]))
	deliverTo(t, a, "many", to...)
	waitClosed(t, waiting, 5*time.Second, "Changed on B after a delivery on A to 200 inboxes")
}
