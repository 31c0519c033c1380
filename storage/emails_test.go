package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock that moves only when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openDB(t testing.TB, opts Options) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "burner.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func ptr(s string) *string { return &s }

func deliver(t testing.TB, db *DB, subject string, to ...string) []Email {
	t.Helper()
	msg := &Message{From: "sender@example.net", FromName: "Sender", Subject: ptr(subject), Body: ptr("<p>" + subject + "</p>"), Text: subject, Raw: []byte("Subject: " + subject + "\r\n\r\nhi\r\n")}
	got, err := db.Deliver(context.Background(), msg, to)
	if err != nil {
		t.Fatalf("Deliver(%q): %v", to, err)
	}
	return got
}

// deliverMany delivers n messages from 8 goroutines, so that bbolt's
// Batch shares the fsyncs; msg(i) gives the subject and recipient of the
// i-th. Their order is not defined.
func deliverMany(t testing.TB, db *DB, n int, msg func(i int) (subject, to string)) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				subject, to := msg(i)
				m := &Message{Subject: ptr(subject), Text: subject, Raw: []byte("Subject: " + subject + "\r\n\r\n")}
				if _, err := db.Deliver(context.Background(), m, []string{to}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func subjects(es []Email) []string {
	var out []string
	for _, e := range es {
		out = append(out, *e.Subject)
	}
	return out
}

func list(t *testing.T, db *DB, q Query) []string {
	t.Helper()
	got, err := db.List(context.Background(), q)
	if err != nil {
		t.Fatalf("List(%+v): %v", q, err)
	}
	return subjects(got)
}

func equal(a, b []string) bool {
	return fmt.Sprint(a) == fmt.Sprint(b) && len(a) == len(b)
}

func TestDeliverAndGet(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.UTC)}
	db := openDB(t, Options{Now: clk.Now})
	msg := &Message{From: "a@b.c", FromName: "A", Subject: nil, Body: nil, Text: "x", Raw: []byte("raw bytes")}
	got, err := db.Deliver(context.Background(), msg, []string{"Alice@example.com", "bob@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID == got[1].ID {
		t.Fatalf("Deliver to 2 recipients returned %+v, want 2 emails with distinct ids", got)
	}
	e, err := db.Email(context.Background(), got[0].ID)
	if err != nil {
		t.Fatalf("Email(%s): %v", got[0].ID, err)
	}
	want := Email{ID: got[0].ID, To: "Alice@example.com", From: "a@b.c", FromName: "A", ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)}
	if e != want {
		t.Errorf("Email = %+v, want %+v", e, want)
	}
	raw, err := db.Raw(context.Background(), got[1].ID)
	if err != nil || string(raw) != "raw bytes" {
		t.Errorf("Raw = %q, %v; want %q", raw, err, "raw bytes")
	}
	// Each recipient's copy has its own life.
	if err := db.Delete(context.Background(), got[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Email(context.Background(), got[0].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Email after Delete: err = %v, want ErrNotFound", err)
	}
	if raw, err := db.Raw(context.Background(), got[1].ID); err != nil || string(raw) != "raw bytes" {
		t.Errorf("Raw of the other copy after Delete = %q, %v; want it kept", raw, err)
	}
	if err := db.Delete(context.Background(), got[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(context.Background(), got[1].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	for _, id := range []string{"", "not-a-uuid", "00000000-0000-0000-0000-000000000000",
		"urn:uuid:" + got[1].ID, "{" + got[1].ID + "}", strings.ReplaceAll(got[1].ID, "-", "")} {
		if _, err := db.Email(context.Background(), id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Email(%q): err = %v, want ErrNotFound", id, err)
		}
	}
}

func TestListOrderAndIsolation(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	db := openDB(t, Options{Now: clk.Now})
	deliver(t, db, "a1", "alice@x.org")
	clk.Advance(time.Second)
	deliver(t, db, "plus", "alice+x@x.org")
	deliver(t, db, "f", "alicf@x.org")
	deliver(t, db, "short", "alic@x.org")
	deliver(t, db, "a2", "ALICE@y.org")
	deliver(t, db, "a3", "alice@x.org") // same millisecond as a2: later arrival first
	clk.Advance(time.Millisecond)
	deliver(t, db, "a4", "aLiCe@x.org")

	for _, tc := range []struct {
		q    Query
		want []string
	}{
		{Query{LocalPart: "alice"}, []string{"a4", "a3", "a2", "a1"}},
		{Query{LocalPart: "ALICE"}, []string{"a4", "a3", "a2", "a1"}},
		{Query{LocalPart: "alice+x"}, []string{"plus"}},
		{Query{LocalPart: "alicf"}, []string{"f"}},
		{Query{LocalPart: "alic"}, []string{"short"}},
		{Query{LocalPart: "alice", Limit: 2}, []string{"a4", "a3"}},
		{Query{LocalPart: "nobody"}, nil},
		{Query{LocalPart: "zzz"}, nil}, // past the last key in the file
		{Query{LocalPart: "alice", Since: time.Unix(1_700_000_000, 0)}, []string{"a4", "a3", "a2"}},
		{Query{LocalPart: "alice", Since: time.Unix(1_700_000_001, 0)}, []string{"a4"}},
		{Query{LocalPart: "alice", Since: time.Unix(1_700_000_001, 500_000)}, []string{"a4"}},
		{Query{LocalPart: "alice", Since: time.Unix(1_700_000_001, 1_000_000)}, nil},
	} {
		if got := list(t, db, tc.q); !equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func TestListFilters(t *testing.T) {
	db := openDB(t, Options{})
	add := func(subject, fromName, from, text string) {
		t.Helper()
		msg := &Message{From: from, FromName: fromName, Subject: ptr(subject), Body: ptr(text), Text: text, Raw: []byte("x")}
		if _, err := db.Deliver(context.Background(), msg, []string{"in@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	add("Welcome to Straße", "Grüße GmbH", "hello@shop.example", "Click https://shop.example/verify?t=1 to confirm")
	add("Your code", "Bank", "noreply@bank.example", "Your one time code is 4242")
	msg := &Message{From: "x@y.z", Subject: nil, Body: nil, Text: "", Raw: []byte("x")}
	if _, err := db.Deliver(context.Background(), msg, []string{"in@x.org"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    Query
		want []string
	}{
		{Query{Subject: "STRASSE"}, []string{"Welcome to Straße"}},
		{Query{Subject: "code"}, []string{"Your code"}},
		{Query{Subject: "nothing"}, nil},
		{Query{Body: "VERIFY?T=1"}, []string{"Welcome to Straße"}},
		{Query{Body: "4242"}, []string{"Your code"}},
		{Query{Terms: []string{"bank", "4242"}}, []string{"Your code"}},
		{Query{Terms: []string{"grüsse", "confirm"}}, []string{"Welcome to Straße"}},
		{Query{Terms: []string{"shop.example"}}, []string{"Welcome to Straße"}},
		{Query{Terms: []string{"time code"}}, []string{"Your code"}},
		{Query{Terms: []string{"code time"}}, nil},
		{Query{Terms: []string{"bank", "confirm"}}, nil},
	} {
		tc.q.LocalPart = "in"
		if got := list(t, db, tc.q); !equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func TestClear(t *testing.T) {
	db := openDB(t, Options{})
	deliverMany(t, db, smallTx+3, func(i int) (string, string) { return fmt.Sprint("m", i), "bulk@x.org" })
	kept := deliver(t, db, "other", "bulk+1@x.org", "bulk@x.org")
	n, err := db.Clear(context.Background(), "BULK")
	if err != nil || n != smallTx+4 {
		t.Fatalf("Clear = %d, %v; want %d, nil", n, err, smallTx+4)
	}
	if got := list(t, db, Query{LocalPart: "bulk"}); len(got) != 0 {
		t.Errorf("List after Clear = %q, want none", got)
	}
	if got := list(t, db, Query{LocalPart: "bulk+1"}); !equal(got, []string{"other"}) {
		t.Errorf("List(bulk+1) after clearing bulk = %q, want [other]", got)
	}
	if raw, err := db.Raw(context.Background(), kept[0].ID); err != nil || len(raw) == 0 {
		t.Errorf("Raw of the copy in another inbox = %q, %v; want it kept", raw, err)
	}
	if n, err := db.Clear(context.Background(), "bulk"); n != 0 || err != nil {
		t.Errorf("Clear of an empty inbox = %d, %v; want 0, nil", n, err)
	}
}

func TestMarkRead(t *testing.T) {
	db := openDB(t, Options{})
	e := deliver(t, db, "s", "r@x.org")[0]
	if e.Read {
		t.Fatal("a new email is read")
	}
	for range 2 { // idempotent
		if err := db.MarkRead(context.Background(), e.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Email(context.Background(), e.ID)
	if err != nil || !got.Read || *got.Subject != "s" {
		t.Errorf("Email after MarkRead = %+v, %v; want read, subject kept", got, err)
	}
	if err := db.MarkRead(context.Background(), "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkRead(unknown) = %v, want ErrNotFound", err)
	}
}

func TestReopenKeepsMail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := &Message{From: "a@b.c", Subject: ptr("kept"), Text: "", Raw: []byte("x")}
	got, err := db.Deliver(context.Background(), msg, []string{"k@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Errorf("second Open of a file in use: err = %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Deliver(context.Background(), msg, []string{"k@x.org"}); err == nil {
		t.Error("Deliver on a closed DB succeeded")
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if e, err := db.Email(context.Background(), got[0].ID); err != nil || *e.Subject != "kept" {
		t.Errorf("Email after reopen = %+v, %v", e, err)
	}
}

func TestDeliverRejectsBadLocalPart(t *testing.T) {
	db := openDB(t, Options{})
	msg := &Message{Raw: []byte("x")}
	for _, to := range []string{"a b@x.org", "@x.org", "a\x00b@x.org", fmt.Sprintf("%065d@x.org", 0)} {
		if _, err := db.Deliver(context.Background(), msg, []string{to}); err == nil {
			t.Errorf("Deliver(%q) succeeded, want an error", to)
		}
	}
}

func TestValidLocalPart(t *testing.T) {
	for s, want := range map[string]bool{
		"alice": true, "A.b-c_d+e": true, "0": true,
		"": false, "a b": false, "a@b": false, "ä": false, "a/b": false, "a\"b": false,
	} {
		if got := ValidLocalPart(s); got != want {
			t.Errorf("ValidLocalPart(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestListAfterAndHeader(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	db := openDB(t, Options{Now: clk.Now})
	var es []Email
	for i := range 4 {
		msg := &Message{Subject: ptr(fmt.Sprint("m", i)), Raw: []byte("x"),
			Headers: []Header{{"X-Test-Run", fmt.Sprint("Run ", i%2)}, {"Subject", fmt.Sprint("m", i)}}}
		got, err := db.Deliver(context.Background(), msg, []string{"h@x.org"})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, got[0])
	}
	other := deliver(t, db, "o", "other@x.org")[0]
	for _, tc := range []struct {
		q    Query
		want []string
	}{
		{Query{After: es[1].ID}, []string{"m3", "m2"}},
		{Query{Before: es[2].ID}, []string{"m1", "m0"}},
		{Query{Before: es[3].ID, Limit: 2}, []string{"m2", "m1"}},
		{Query{Before: es[0].ID}, nil},
		{Query{Before: es[3].ID, After: es[0].ID}, []string{"m2", "m1"}},
		{Query{After: es[3].ID}, nil},
		{Query{Header: &Header{"x-test-RUN", "run 1"}}, []string{"m3", "m1"}},
		{Query{Header: &Header{"X-Test-Run", "RUN"}}, []string{"m3", "m2", "m1", "m0"}},
		{Query{Header: &Header{"X-Other", "run"}}, nil},
		{Query{Header: &Header{"X-Test-Run", "run 0"}, Subject: "m2"}, []string{"m2"}},
		{Query{Header: &Header{"X-Test-Run", "run 0"}, After: es[0].ID}, []string{"m2"}},
	} {
		tc.q.LocalPart = "h"
		if got := list(t, db, tc.q); !equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
	for _, after := range []string{other.ID, "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11", "junk"} {
		if _, err := db.List(context.Background(), Query{LocalPart: "h", After: after}); !errors.Is(err, ErrNotFound) {
			t.Errorf("List(After: %s) err = %v, want ErrNotFound", after, err)
		}
		if _, err := db.List(context.Background(), Query{LocalPart: "h", Before: after}); !errors.Is(err, ErrNotFound) {
			t.Errorf("List(Before: %s) err = %v, want ErrNotFound", after, err)
		}
	}
}

func TestChanged(t *testing.T) {
	db := openDB(t, Options{})
	alice, alice2, bob := db.Changed("alice"), db.Changed("ALICE"), db.Changed("bob")
	if alice != alice2 {
		t.Error("Changed(alice) and Changed(ALICE) differ; waiters of one inbox share a channel")
	}
	deliver(t, db, "s", "Alice@x.org")
	select {
	case <-alice:
	default:
		t.Error("Changed(alice) not closed by a delivery to Alice@")
	}
	select {
	case <-bob:
		t.Error("Changed(bob) closed by a delivery to alice")
	default:
	}
	if next := db.Changed("alice"); next == alice {
		t.Error("Changed(alice) after a delivery returned the closed channel")
	}
	db.notifyMu.Lock()
	n := len(db.waiting)
	db.notifyMu.Unlock()
	if n != 2 {
		t.Errorf("%d inboxes held for waiters, want 2 (bob, and alice again)", n)
	}
}

func TestContent(t *testing.T) {
	db := openDB(t, Options{})
	msg := &Message{Subject: ptr("s"), Plain: "Hello\nworld", Links: []string{"https://a.test/1", "mailto:x@y.z"}, Raw: []byte("x")}
	e, err := db.Deliver(context.Background(), msg, []string{"c@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Content(context.Background(), e[0].ID)
	if err != nil || got.Plain != msg.Plain || fmt.Sprint(got.Links) != fmt.Sprint(msg.Links) {
		t.Errorf("Content = %+v, %v; want plain %q and links %q", got, err, msg.Plain, msg.Links)
	}
	if _, err := db.Content(context.Background(), "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Content(unknown) err = %v, want ErrNotFound", err)
	}
}
