package boltdb

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"burner/storage"
)

// copySource makes a data file that holds what a copy must carry: a
// message to two inboxes, one read, one with an attachment index, text
// that folds (ß, Σ), a message without subject or body, scoped keys, and
// webhook events, one of them retried. It returns the file, closed, and
// the secret of its scoped key.
func copySource(t *testing.T) (path, secret string) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "src.db")
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(1500 * time.Microsecond)
		return now
	}
	db, err := Open(path, Options{Now: clock, Hooks: []storage.Hook{{ID: "all"}, {ID: "ci", Scope: storage.Scope{Inboxes: []string{"ci-*"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	body := "<p>Straße: your code is <b>424242</b></p>"
	msgs := []struct {
		msg storage.Message
		to  []string
	}{
		{storage.Message{From: "shop@x.test", FromName: "Shop ΣΑΣ", Subject: new("Welcome to STRASSE"), Body: &body,
			Text: "Straße: your code is 424242\nhttps://x.test/confirm?t=1\nStraße: your code is 424242", Plain: "Straße: your code is 424242",
			Links:   []string{"https://x.test/confirm?t=1"},
			Headers: []storage.Header{{Name: "Subject", Value: "Welcome to STRASSE"}, {Name: "X-Campaign", Value: "Spring ΣALE"}},
			Raw:     []byte("Subject: Welcome to STRASSE\r\nX-Campaign: Spring =?utf-8?q?=CE=A3ALE?=\r\n\r\nStra\xc3\x9fe\r\n")},
			[]string{"Alice@in.test", "ci-build-7@in.test"}},
		{storage.Message{From: "bounce@y.test", Raw: []byte("\r\n\x00binary\xff")}, []string{"alice@in.test"}},
		{storage.Message{From: "a@z.test", Subject: new("second"), Body: new(""), Text: "second", Raw: []byte("Subject: second\r\n\r\n")},
			[]string{"ci-build-7@in.test", "bob@in.test", "alice@in.test"}},
	}
	var stored []storage.Email
	for _, m := range msgs {
		es, err := db.Deliver(ctx, &m.msg, m.to)
		if err != nil {
			t.Fatalf("Deliver: %v", err)
		}
		stored = append(stored, es...)
	}
	if err := db.MarkRead(ctx, stored[2].ID); err != nil {
		t.Fatal(err)
	}
	a := storage.Attachments{Files: []storage.Attachment{{Filename: "a.pdf", ContentType: "application/pdf", Size: 12}}, More: 2, Partial: true, Rules: 3}
	if err := db.PutAttachments(ctx, stored[0].ID, a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateKey(ctx, "default", storage.Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, secret, err = db.CreateKey(ctx, "ci", storage.Scope{Inboxes: []string{"CI-*"}, ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, secret); err != nil { // a last use, in memory until Close
		t.Fatal(err)
	}
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "ci", Now: clock().Add(time.Hour), Lease: time.Minute, Max: 1})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ClaimEvents(ci) = %d events, %v; want 1", len(evs), err)
	}
	evs[0].Attempts = 2
	if err := db.RetryEvent(ctx, evs[0], clock().Add(time.Hour).Truncate(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

// TestCopy copies a file into a new one and asks both the same things:
// every answer is the same, ids, receivedAt, read flags, raw sources,
// attachment indexes, keys and events included (SPEC §10).
func TestCopy(t *testing.T) {
	ctx := context.Background()
	srcPath, secret := copySource(t)
	src, err := Open(srcPath, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := Open(filepath.Join(t.TempDir(), "dst.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()

	var calls []storage.CopyCount
	n, err := dst.Import(ctx, src, func(c storage.CopyCount) { calls = append(calls, c) })
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	want := storage.CopyCount{Keys: 2, Messages: 3, Emails: 6, Events: 8} // hook all: 6 emails; ci: 2
	if n.Bytes == 0 || len(calls) == 0 || calls[len(calls)-1] != n {
		t.Errorf("Import counted %+v, progress %+v: want bytes counted and the last progress equal to the total", n, calls)
	}
	n.Bytes = 0
	if n != want {
		t.Errorf("Import copied %+v, want %+v", n, want)
	}

	same := func(what string, get func(db *DB) (any, error)) {
		t.Helper()
		a, errA := get(src)
		b, errB := get(dst)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s:\nsource %+v (%v)\ncopy   %+v (%v)", what, a, errA, b, errB)
		}
	}
	same("Stats", func(db *DB) (any, error) {
		s, err := db.Stats(ctx)
		s.FileBytes = 0
		return s, err
	})
	same("Inboxes", func(db *DB) (any, error) { return db.Inboxes(ctx) })
	same("Keys", func(db *DB) (any, error) { return db.Keys(ctx) })
	same("Authenticate", func(db *DB) (any, error) { return db.Authenticate(ctx, secret) })
	for _, q := range []storage.Query{
		{LocalPart: "alice"},
		{LocalPart: "ALICE", Limit: 2},
		{LocalPart: "ci-build-7"},
		{LocalPart: "bob"},
		{LocalPart: "alice", Subject: storage.Fold("strasse")},
		{LocalPart: "alice", Body: storage.Fold("STRASSE")},
		{LocalPart: "alice", Terms: []string{storage.Fold("σας")}},
		{LocalPart: "alice", Header: &storage.Header{Name: "x-campaign", Value: storage.Fold("σale")}},
	} {
		same("List "+reflectString(q), func(db *DB) (any, error) { return db.List(ctx, q) })
	}
	all, err := src.List(ctx, storage.Query{LocalPart: "alice"})
	if err != nil || len(all) != 3 {
		t.Fatalf("List(alice) on the source: %d emails, %v; want 3", len(all), err)
	}
	if !slices.ContainsFunc(all, func(e storage.Email) bool { return e.Read }) {
		t.Errorf("no email of alice is read in the source: the test marks one")
	}
	for _, in := range []string{"alice", "bob", "ci-build-7"} {
		es, _ := src.List(ctx, storage.Query{LocalPart: in})
		for _, e := range es {
			same("Email "+e.ID, func(db *DB) (any, error) { return db.Email(ctx, e.ID) })
			same("Raw "+e.ID, func(db *DB) (any, error) { return db.Raw(ctx, e.ID) })
			same("Content "+e.ID, func(db *DB) (any, error) { return db.Content(ctx, e.ID) })
			same("Attachments "+e.ID, func(db *DB) (any, error) {
				a, ok, err := db.Attachments(ctx, e.ID)
				return []any{a, ok}, err
			})
		}
	}
	events := func(db *DB) (any, error) {
		var out []storage.Event
		for _, h := range []string{"all", "ci"} {
			evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: h, Now: time.Now().Add(48 * time.Hour), Lease: time.Nanosecond, Max: 100})
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
		slices.SortFunc(out, func(a, b storage.Event) int {
			return strings.Compare(a.Hook+a.Email.ID, b.Hook+b.Email.ID)
		})
		return out, nil
	}
	same("events", events)
	if evs, _ := events(dst); !slices.ContainsFunc(evs.([]storage.Event), func(e storage.Event) bool { return e.Attempts == 2 }) {
		t.Errorf("no copied event kept its 2 attempts: %+v", evs)
	}
	r, err := dst.Check(ctx)
	if err != nil || !r.OK() || r.Messages != 3 || r.Emails != 6 {
		t.Errorf("Check of the copy: %+v, %v; want it sound with 3 messages and 6 emails", r, err)
	}

	// A delivery to the copy goes on after the newest email of its inbox.
	newest := all[0].ReceivedAt
	es, err := dst.Deliver(ctx, &storage.Message{From: "late@x.test", Raw: []byte("\r\n")}, []string{"alice@in.test"})
	if err != nil || !es[0].ReceivedAt.After(newest) {
		t.Errorf("Deliver to the copy: %+v, %v; want receivedAt after %v", es, err, newest)
	}

	// A store that holds anything is refused, unchanged.
	before, _ := dst.Stats(ctx)
	if _, err := dst.Import(ctx, src, nil); !errors.Is(err, storage.ErrNotNew) {
		t.Errorf("Import into a store that holds mail: %v, want ErrNotNew", err)
	}
	if after, _ := dst.Stats(ctx); after != before {
		t.Errorf("a refused Import changed the store: %+v, was %+v", after, before)
	}
}

// reflectString names a query in a failure.
func reflectString(q storage.Query) string {
	var b strings.Builder
	b.WriteString(q.LocalPart)
	for _, s := range []string{q.Subject, q.Body, strings.Join(q.Terms, ",")} {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	if q.Header != nil {
		b.WriteString(" " + q.Header.Name + ":" + q.Header.Value)
	}
	return b.String()
}

// A key alone in a store makes it not new, and so does an event alone.
func TestImportRefusesKeys(t *testing.T) {
	ctx := context.Background()
	srcPath, _ := copySource(t)
	src, err := Open(srcPath, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := openDB(t, Options{})
	if _, _, err := dst.CreateKey(ctx, "mine", storage.Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Import(ctx, src, nil); !errors.Is(err, storage.ErrNotNew) {
		t.Errorf("Import into a store with a key: %v, want ErrNotNew", err)
	}
	if s, _ := dst.Stats(ctx); s.Emails != 0 || s.Keys != 1 {
		t.Errorf("a refused Import changed the store: %+v", s)
	}
}
