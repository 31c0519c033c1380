package storetest

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"
)

// CopyConfig returns the Config of a store for FillCopySource: the hooks
// of the outbox cases and a clock that moves 1.5 ms at each reading, so
// that every time the source holds differs.
func CopyConfig() Config {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	return Config{Hooks: outboxHooks, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(1500 * time.Microsecond)
		return now
	}}
}

// FillCopySource fills db, opened with CopyConfig, with what a copy must
// carry: a message to two inboxes, one read, one with an attachment
// index and an authentication verdict (another message's record is
// pending), text that folds (ß, Σ) and repeats a line, binary and NUL in a
// raw source and a search text, a message without subject or body,
// scoped keys, one used (in memory: Export gives it), a metrics key, and
// webhook events, one of them retried. It returns the secret of the
// scoped key "ci".
func FillCopySource(t testing.TB, db storage.Engine, cfg Config) string {
	t.Helper()
	ctx := context.Background()
	body := "<p>Straße: your code is <b>424242</b></p>"
	msgs := []struct {
		msg storage.Message
		to  []string
	}{
		{storage.Message{From: "shop@x.test", FromName: "Shop ΣΑΣ", Subject: ptr("Welcome to STRASSE"), Body: &body,
			Text: "Straße: your code is 424242\nhttps://x.test/confirm?t=1\nStraße: your code is 424242", Plain: "Straße: your code is 424242",
			Links:   []string{"https://x.test/confirm?t=1"},
			Headers: []storage.Header{{Name: "Subject", Value: "Welcome to STRASSE"}, {Name: "X-Campaign", Value: "Spring ΣALE"}},
			Raw:     []byte("Subject: Welcome to STRASSE\r\nX-Campaign: Spring =?utf-8?q?=CE=A3ALE?=\r\n\r\nStra\xc3\x9fe\r\n")},
			[]string{"Alice@in.test", "ci-build-7@in.test"}},
		{storage.Message{From: "bounce@y.test", Text: "bin\x00ary \xff", Raw: []byte("\r\n\x00binary\xff"),
			Auth: &storage.AuthResult{Status: storage.AuthPending, Envelope: storage.Envelope{ClientIP: netip.MustParseAddr("2001:db8::1"),
				Helo: "y.test", TLS: &storage.TLS{Version: "TLS 1.2", Cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}}},
			[]string{"alice@in.test"}},
		{storage.Message{From: "a@z.test", Subject: ptr("second"), Body: ptr(""), Text: "second", Raw: []byte("Subject: second\r\n\r\n")},
			[]string{"ci-build-7@in.test", "bob@in.test", "alice@in.test"}},
	}
	msgs[0].msg.Auth = &storage.AuthResult{Status: storage.AuthPending, Envelope: copyAuth.Envelope}
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
	if err := db.PutAuth(ctx, []string{stored[0].ID, stored[1].ID}, copyAuth); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateKey(ctx, "default", storage.Scope{}); err != nil {
		t.Fatal(err)
	}
	_, secret, err := db.CreateKey(ctx, "ci", storage.Scope{Inboxes: []string{"CI-*"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateKey(ctx, "prom", storage.Scope{Metrics: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: "ci", Node: "n1", Now: cfg.Now().Add(time.Hour), Lease: time.Minute, Max: 1})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ClaimEvents(ci) = %d events, %v; want 1", len(evs), err)
	}
	evs[0].Attempts = 2
	if err := db.RetryEvent(ctx, evs[0], record.Milli(cfg.Now().Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	return secret
}

// copyAuth is the verdict of FillCopySource's first message.
var copyAuth = storage.AuthResult{
	Status:   storage.AuthDone,
	Envelope: storage.Envelope{ClientIP: netip.MustParseAddr("192.0.2.7"), Helo: "mail.x.test", MailFrom: "bounce@x.test"},
	PTR:      "mail.x.test", FCrDNS: true,
	SPF:                   storage.SPFResult{Result: storage.AuthPass, Domain: "x.test"},
	DKIM:                  []storage.DKIMResult{{Result: storage.AuthFail, Domain: "x.test", Selector: "s1", Error: "signature did not verify"}},
	DMARC:                 storage.DMARCResult{Result: storage.AuthPass, Domain: "x.test", Policy: "none", SPFAligned: true},
	AuthenticationResults: "mx.test; spf=pass smtp.mailfrom=x.test; dkim=fail header.d=x.test header.s=s1; dmarc=pass header.from=x.test",
}

// copyStores opens a source filled by FillCopySource and an empty
// destination with the same clock.
func copyStores(t *testing.T, open Opener) (src, dst storage.Engine, cfg Config, secret string) {
	t.Helper()
	cfg = CopyConfig()
	src = open(t, cfg)
	secret = FillCopySource(t, src, cfg)
	return src, open(t, cfg), cfg, secret
}

// testCopy copies a store into a new one and asks both the same things:
// every answer is the same, ids, receivedAt, read flags, raw sources,
// attachment indexes, keys and events included.
func testCopy(t *testing.T, open Opener) {
	ctx := context.Background()
	src, dst, cfg, secret := copyStores(t, open)

	var calls []storage.CopyCount
	n, err := dst.Import(ctx, src, func(c storage.CopyCount) { calls = append(calls, c) })
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	want := storage.CopyCount{Keys: 3, Messages: 3, Emails: 6, Events: 8} // hook all: 6 emails; ci: 2
	if n.Bytes == 0 || len(calls) == 0 || calls[len(calls)-1] != n {
		t.Errorf("Import counted %+v, progress %+v: want bytes counted and the last progress equal to the total", n, calls)
	}
	n.Bytes = 0
	if n != want {
		t.Errorf("Import copied %+v, want %+v", n, want)
	}
	SameStores(t, src, dst)

	all, err := src.List(ctx, storage.Query{LocalPart: "alice"})
	if err != nil || len(all) != 3 {
		t.Fatalf("List(alice) on the source: %d emails, %v; want 3", len(all), err)
	}
	if !slices.ContainsFunc(all, func(e storage.Email) bool { return e.Read }) {
		t.Errorf("no email of alice is read in the source: the test marks one")
	}
	evs, _ := exportedEvents(ctx, dst)
	if !slices.ContainsFunc(evs, func(e storage.Event) bool { return e.Attempts == 2 && e.Next.After(e.Email.ReceivedAt) }) {
		t.Errorf("no copied event kept its 2 attempts and its due time: %+v", evs)
	}
	keys, _ := dst.Keys(ctx)
	if !slices.ContainsFunc(keys, func(k storage.Key) bool { return k.Name == "ci" && !k.LastUsed.IsZero() }) {
		t.Errorf("the copied key ci lost its last use: %+v", keys)
	}
	// Both note the use at their clock's next reading: only the times differ.
	ka, errA := src.Authenticate(ctx, secret)
	kb, errB := dst.Authenticate(ctx, secret)
	ka.LastUsed, kb.LastUsed = time.Time{}, time.Time{}
	if errA != nil || errB != nil || !reflect.DeepEqual(ka, kb) || kb.Name != "ci" || !kb.Scope.ReadOnly {
		t.Errorf("Authenticate with the source's secret:\nsource %+v (%v)\ncopy   %+v (%v)", ka, errA, kb, errB)
	}
	if r, err := dst.Check(ctx); err != nil || !r.OK() || r.Messages != 3 || r.Emails != 6 || r.Keys != 3 {
		t.Errorf("Check of the copy: %+v, %v; want it sound with 3 messages, 6 emails and 3 keys", r, err)
	}

	// The copy hands its events out: those never retried at once.
	claimed, err := dst.ClaimEvents(ctx, storage.Claim{Hook: "all", Node: "n", Now: cfg.Now(), Lease: time.Minute, Max: 100})
	if err != nil || len(claimed) != 6 {
		t.Errorf("ClaimEvents(all) on the copy: %d events, %v; want 6", len(claimed), err)
	}
	// And every event, the retried one too, once it is due, as the source does.
	later := cfg.Now().Add(48 * time.Hour)
	claims := func(db storage.Engine) ([]storage.Event, error) {
		var out []storage.Event
		for _, h := range []string{"all", "ci"} {
			evs, err := db.ClaimEvents(ctx, storage.Claim{Hook: h, Node: "n", Now: later, Lease: time.Nanosecond, Max: 100})
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
		sortEvents(out)
		return out, nil
	}
	ca, errA := claims(src)
	cb, errB := claims(dst)
	if errA != nil || errB != nil || len(ca) != 8 || !reflect.DeepEqual(ca, cb) {
		t.Errorf("ClaimEvents of every hook:\nsource %+v (%v)\ncopy   %+v (%v)", ca, errA, cb, errB)
	}

	// A delivery to the copy goes on after the newest email of its inbox.
	newest := all[0].ReceivedAt
	es, err := dst.Deliver(ctx, &storage.Message{From: "late@x.test", Raw: []byte("\r\n")}, []string{"alice@in.test"})
	if err != nil || !es[0].ReceivedAt.After(newest) {
		t.Errorf("Deliver to the copy: %+v, %v; want receivedAt after %v", es, err, newest)
	}

	// A store that holds anything is refused, unchanged.
	before := statsOf(t, dst)
	if _, err := dst.Import(ctx, src, nil); !errors.Is(err, storage.ErrNotNew) {
		t.Errorf("Import into a store that holds mail: %v, want ErrNotNew", err)
	}
	if after := statsOf(t, dst); after != before {
		t.Errorf("a refused Import changed the store: %+v, was %+v", after, before)
	}
}

// statsOf returns db's Stats without the size of its file, which a
// refused write may change (a database's pages).
func statsOf(t *testing.T, db storage.Engine) storage.Stats {
	t.Helper()
	s, err := db.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	s.FileBytes = 0
	return s
}

// testImportRefusesKeys: a key alone makes a store not new.
func testImportRefusesKeys(t *testing.T, open Opener) {
	ctx := context.Background()
	src, dst, _, _ := copyStores(t, open)
	if _, _, err := dst.CreateKey(ctx, "mine", storage.Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Import(ctx, src, nil); !errors.Is(err, storage.ErrNotNew) {
		t.Errorf("Import into a store with a key: %v, want ErrNotNew", err)
	}
	if s := statsOf(t, dst); s.Emails != 0 || s.Keys != 1 {
		t.Errorf("a refused Import changed the store: %+v", s)
	}
}

// testExportStops: an Export stops at the first error of a visitor, and
// returns it.
func testExportStops(t *testing.T, open Opener) {
	src, _, _, _ := copyStores(t, open)
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

// testCopyKeepsLaterUse: a key's last use never moves back. The copy's
// clock stands a day behind the source's last use of the key (a clock
// stepped back, or a node behind another): a use there leaves the later
// one in Keys and in what RevokeKey returns.
func testCopyKeepsLaterUse(t *testing.T, open Opener) {
	ctx := context.Background()
	src, _, _, secret := copyStores(t, open)
	used := keyNamed(t, src, "ci").LastUsed
	clk := NewClock(used.Add(-24 * time.Hour))
	dst := open(t, Config{Now: clk.Now})
	if _, err := dst.Import(ctx, src, nil); err != nil {
		t.Fatalf("Import: %v", err)
	}
	if got := keyNamed(t, dst, "ci").LastUsed; !got.Equal(used) {
		t.Fatalf("the copy's key ci was last used %v, the source's %v", got, used)
	}
	k, err := dst.Authenticate(ctx, secret)
	if err != nil || !k.LastUsed.Equal(clk.Now()) {
		t.Errorf("Authenticate = %+v, %v; want the key used now, %v", k, err, clk.Now())
	}
	if got := keyNamed(t, dst, "ci").LastUsed; !got.Equal(used) {
		t.Errorf("after a use at %v, Keys says ci was last used %v; want the later %v", clk.Now(), got, used)
	}
	if k, err := dst.RevokeKey(ctx, "ci"); err != nil || !k.LastUsed.Equal(used) {
		t.Errorf("RevokeKey(ci) = %+v, %v; want it last used %v", k, err, used)
	}
}

func keyNamed(t *testing.T, db storage.Engine, name string) storage.Key {
	t.Helper()
	keys, err := db.Keys(context.Background())
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	for _, k := range keys {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("no key %q in %+v", name, keys)
	return storage.Key{}
}

// SameStores fails t where a and b, two storage.Exporter, answer
// differently: stats, inboxes, keys, every list of the inboxes of
// FillCopySource, email, raw source, content, attachment index and
// authentication record and waiting event.
func SameStores(t testing.TB, a, b storage.Engine) {
	t.Helper()
	ctx := context.Background()
	same := func(what string, get func(db storage.Engine) (any, error)) {
		t.Helper()
		x, errX := get(a)
		y, errY := get(b)
		if errX != nil || errY != nil || !reflect.DeepEqual(x, y) {
			t.Errorf("%s:\nsource %+v (%v)\ncopy   %+v (%v)", what, x, errX, y, errY)
		}
	}
	same("Stats", func(db storage.Engine) (any, error) {
		s, err := db.Stats(ctx)
		s.FileBytes = 0
		return s, err
	})
	same("Inboxes", func(db storage.Engine) (any, error) { return db.Inboxes(ctx) })
	same("Keys", func(db storage.Engine) (any, error) { return db.Keys(ctx) })
	for _, q := range []storage.Query{
		{LocalPart: "alice"},
		{LocalPart: "ALICE", Limit: 2},
		{LocalPart: "ci-build-7"},
		{LocalPart: "bob"},
		{LocalPart: "alice", Subject: match.Fold("strasse")},
		{LocalPart: "alice", Body: match.Fold("STRASSE")},
		{LocalPart: "alice", Body: "\x00ary"},
		{LocalPart: "alice", Terms: []string{match.Fold("σας")}},
		{LocalPart: "alice", Header: &storage.Header{Name: "x-campaign", Value: match.Fold("σale")}},
	} {
		same("List "+queryString(q), func(db storage.Engine) (any, error) { return db.List(ctx, q) })
	}
	for _, in := range []string{"alice", "bob", "ci-build-7"} {
		es, _ := a.List(ctx, storage.Query{LocalPart: in})
		for _, e := range es {
			same("Email "+e.ID, func(db storage.Engine) (any, error) { return db.Email(ctx, e.ID) })
			same("Raw "+e.ID, func(db storage.Engine) (any, error) { return db.Raw(ctx, e.ID) })
			same("Content "+e.ID, func(db storage.Engine) (any, error) { return db.Content(ctx, e.ID) })
			same("Attachments "+e.ID, func(db storage.Engine) (any, error) {
				a, ok, err := db.Attachments(ctx, e.ID)
				return []any{a, ok}, err
			})
			same("Auth "+e.ID, func(db storage.Engine) (any, error) { return db.Auth(ctx, e.ID) })
		}
	}
	same("events", func(db storage.Engine) (any, error) { return exportedEvents(ctx, db) })
}

// exportedEvents reads the events db exports, without claiming them.
func exportedEvents(ctx context.Context, db storage.Exporter) ([]storage.Event, error) {
	var out []storage.Event
	err := db.Export(ctx, storage.ExportVisitor{Event: func(e storage.Event) error {
		out = append(out, e)
		return nil
	}})
	sortEvents(out)
	return out, err
}

func sortEvents(evs []storage.Event) {
	slices.SortFunc(evs, func(a, b storage.Event) int { return strings.Compare(a.Hook+a.Email.ID, b.Hook+b.Email.ID) })
}

// queryString names a query in a failure.
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
