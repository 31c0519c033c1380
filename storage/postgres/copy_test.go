package postgres_test

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
	"burner/storage/boltdb"
	"burner/storage/postgres"
)

// copySource fills a new database with what a copy must carry: a message
// to two inboxes, one read, one with an attachment index, text that folds
// (ß, Σ), binary and NUL in a raw source and a search text, a message
// without subject or body, scoped keys, one used, and webhook events, one
// of them retried. It returns the database, open, and the scoped key's
// secret.
func copySource(t *testing.T) (*postgres.DB, string) {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(1500 * time.Microsecond)
		return now
	}
	db := openDB(t, testDatabase(t), postgres.Options{Now: clock,
		Hooks: []storage.Hook{{ID: "all"}, {ID: "ci", Scope: storage.Scope{Inboxes: []string{"ci-*"}}}}})
	body := "<p>Straße: your code is <b>424242</b></p>"
	msgs := []struct {
		msg storage.Message
		to  []string
	}{
		{storage.Message{From: "shop@x.test", FromName: "Shop ΣΑΣ", Subject: new("Welcome to STRASSE"), Body: &body,
			Text: "Straße: your code is 424242\nhttps://x.test/confirm?t=1", Plain: "Straße: your code is 424242",
			Links:   []string{"https://x.test/confirm?t=1"},
			Headers: []storage.Header{{Name: "Subject", Value: "Welcome to STRASSE"}, {Name: "X-Campaign", Value: "Spring ΣALE"}},
			Raw:     []byte("Subject: Welcome to STRASSE\r\nX-Campaign: Spring =?utf-8?q?=CE=A3ALE?=\r\n\r\nStra\xc3\x9fe\r\n")},
			[]string{"Alice@in.test", "ci-build-7@in.test"}},
		{storage.Message{From: "bounce@y.test", Text: "bin\x00ary \xff", Raw: []byte("\r\n\x00binary\xff")}, []string{"alice@in.test"}},
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
	_, secret, err := db.CreateKey(ctx, "ci", storage.Scope{Inboxes: []string{"CI-*"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, secret); err != nil { // a last use, in memory: Export gives it
		t.Fatal(err)
	}
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "ci", Now: clock().Add(time.Hour), Lease: time.Minute, Max: 1, Node: "n1"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ClaimEvents(ci) = %d events, %v; want 1", len(evs), err)
	}
	evs[0].Attempts = 2
	if err := db.RetryEvent(ctx, evs[0], clock().Add(time.Hour).Truncate(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	return db, secret
}

// reader is what the copy tests ask of either engine.
type reader interface {
	storage.Store
	storage.Outbox
	storage.Exporter
}

// sameStores fails t where a and b answer differently: stats, inboxes,
// keys, every list, email, raw source, content, attachment index and
// waiting event.
func sameStores(t *testing.T, a, b reader) {
	t.Helper()
	ctx := context.Background()
	same := func(what string, get func(db reader) (any, error)) {
		t.Helper()
		x, errX := get(a)
		y, errY := get(b)
		if errX != nil || errY != nil || !reflect.DeepEqual(x, y) {
			t.Errorf("%s:\nsource %+v (%v)\ncopy   %+v (%v)", what, x, errX, y, errY)
		}
	}
	same("Stats", func(db reader) (any, error) {
		s, err := db.Stats(ctx)
		s.FileBytes = 0
		return s, err
	})
	same("Inboxes", func(db reader) (any, error) { return db.Inboxes(ctx) })
	same("Keys", func(db reader) (any, error) { return db.Keys(ctx) })
	for _, q := range []storage.Query{
		{LocalPart: "alice"},
		{LocalPart: "ALICE", Limit: 2},
		{LocalPart: "ci-build-7"},
		{LocalPart: "bob"},
		{LocalPart: "alice", Subject: storage.Fold("strasse")},
		{LocalPart: "alice", Body: storage.Fold("STRASSE")},
		{LocalPart: "alice", Body: "\x00ary"},
		{LocalPart: "alice", Terms: []string{storage.Fold("σας")}},
		{LocalPart: "alice", Header: &storage.Header{Name: "x-campaign", Value: storage.Fold("σale")}},
	} {
		same("List "+queryString(q), func(db reader) (any, error) { return db.List(ctx, q) })
	}
	for _, in := range []string{"alice", "bob", "ci-build-7"} {
		es, _ := a.List(ctx, storage.Query{LocalPart: in})
		for _, e := range es {
			same("Email "+e.ID, func(db reader) (any, error) { return db.Email(ctx, e.ID) })
			same("Raw "+e.ID, func(db reader) (any, error) { return db.Raw(ctx, e.ID) })
			same("Content "+e.ID, func(db reader) (any, error) { return db.Content(ctx, e.ID) })
			same("Attachments "+e.ID, func(db reader) (any, error) {
				a, ok, err := db.Attachments(ctx, e.ID)
				return []any{a, ok}, err
			})
		}
	}
	same("events", func(db reader) (any, error) { return exportedEvents(ctx, db) })
}

// exportedEvents reads the events db exports, without claiming them.
func exportedEvents(ctx context.Context, db storage.Exporter) ([]storage.Event, error) {
	var out []storage.Event
	err := db.Export(ctx, storage.ExportVisitor{Event: func(e storage.Event) error {
		out = append(out, e)
		return nil
	}})
	slices.SortFunc(out, func(a, b storage.Event) int { return strings.Compare(a.Hook+a.Email.ID, b.Hook+b.Email.ID) })
	return out, err
}

func queryString(q storage.Query) string {
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

// TestCopy copies a database into a new one, into a bbolt file and from
// that into a third database, and asks them all the same: every answer
// is the same, ids, receivedAt, read flags, raw sources, attachment
// indexes, keys and events included (SPEC §10).
func TestCopy(t *testing.T) {
	ctx := context.Background()
	src, secret := copySource(t)
	dst := openDB(t, testDatabase(t), postgres.Options{MustBeNew: true})

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
	sameStores(t, src, dst)
	evs, _ := exportedEvents(ctx, dst)
	if !slices.ContainsFunc(evs, func(e storage.Event) bool { return e.Attempts == 2 && e.Next.After(e.Email.ReceivedAt) }) {
		t.Errorf("no copied event kept its 2 attempts and its due time: %+v", evs)
	}
	keys, _ := dst.Keys(ctx)
	if !slices.ContainsFunc(keys, func(k storage.Key) bool { return k.Name == "ci" && !k.LastUsed.IsZero() }) {
		t.Errorf("the copied key ci lost its last use: %+v", keys)
	}
	if k, err := dst.Authenticate(ctx, secret); err != nil || k.Name != "ci" || !k.Scope.ReadOnly {
		t.Errorf("Authenticate on the copy with the source's secret: %+v, %v", k, err)
	}
	if r, err := dst.Check(ctx); err != nil || !r.OK() || r.Messages != 3 || r.Emails != 6 || r.Keys != 2 {
		t.Errorf("Check of the copy: %+v, %v; want it sound with 3 messages, 6 emails and 2 keys", r, err)
	}
	claimed, err := dst.ClaimEvents(ctx, storage.Claim{Hook: "all", Now: time.Now(), Lease: time.Minute, Max: 100, Node: "n"})
	if err != nil || len(claimed) != 6 {
		t.Errorf("ClaimEvents(all) on the copy: %d events, %v; want 6", len(claimed), err)
	}

	// Through a bbolt file and back: the two engines carry the same.
	file, err := boltdb.Open(filepath.Join(t.TempDir(), "snap.db"), boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if n, err := file.Import(ctx, src, nil); err != nil || n.Emails != 6 || n.Events != 8 {
		t.Fatalf("bbolt Import from the database: %+v, %v", n, err)
	}
	back := openDB(t, testDatabase(t), postgres.Options{MustBeNew: true})
	if _, err := back.Import(ctx, file, nil); err != nil {
		t.Fatalf("Import from the bbolt file: %v", err)
	}
	sameStores(t, src, back)

	// A delivery to the copy goes on after the newest email of its inbox.
	all, _ := src.List(ctx, storage.Query{LocalPart: "alice"})
	es, err := dst.Deliver(ctx, &storage.Message{From: "late@x.test", Raw: []byte("\r\n")}, []string{"alice@in.test"})
	if err != nil || !es[0].ReceivedAt.After(all[0].ReceivedAt) {
		t.Errorf("Deliver to the copy: %+v, %v; want receivedAt after %v", es, err, all[0].ReceivedAt)
	}

	// A store that holds anything is refused, unchanged.
	before, _ := dst.Stats(ctx)
	if _, err := dst.Import(ctx, src, nil); !errors.Is(err, storage.ErrNotNew) {
		t.Errorf("Import into a database that holds mail: %v, want ErrNotNew", err)
	}
	if after, _ := dst.Stats(ctx); after.Emails != before.Emails || after.Keys != before.Keys {
		t.Errorf("a refused Import changed the database: %+v, was %+v", after, before)
	}
}

// A key alone makes a database not new.
func TestImportRefusesKeys(t *testing.T) {
	ctx := context.Background()
	src, _ := copySource(t)
	dst := openDB(t, testDatabase(t), postgres.Options{})
	if _, _, err := dst.CreateKey(ctx, "mine", storage.Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Import(ctx, src, nil); !errors.Is(err, storage.ErrNotNew) {
		t.Errorf("Import into a database with a key: %v, want ErrNotNew", err)
	}
	if s, _ := dst.Stats(ctx); s.Emails != 0 || s.Keys != 1 {
		t.Errorf("a refused Import changed the database: %+v", s)
	}
}

// An Export stops at the first error of a visitor, and returns it.
func TestExportStops(t *testing.T) {
	src, _ := copySource(t)
	stop := errors.New("enough")
	calls := 0
	err := src.Export(context.Background(), storage.ExportVisitor{Message: func(*storage.StoredMessage) error {
		calls++
		return stop
	}})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Export with a visitor that fails: %v after %d calls; want its error after 1", err, calls)
	}
}
