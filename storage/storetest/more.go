package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"burner/storage"
)

func testKeys(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := open(t, Config{Now: clk.Now})
	a, secret, err := db.CreateKey(ctx, "  ci  ", storage.Scope{})
	if err != nil || a.Name != "ci" || !strings.HasPrefix(secret, storage.KeyPrefix) || !a.Created.Equal(clk.Now()) {
		t.Fatalf("CreateKey(ci) = %+v, %q, %v", a, secret, err)
	}
	if _, _, err := db.CreateKey(ctx, "ci", storage.Scope{}); !errors.Is(err, storage.ErrKeyExists) {
		t.Errorf("CreateKey of a taken name: %v, want ErrKeyExists", err)
	}
	for _, bad := range []string{"", " ", "a\nb", strings.Repeat("x", 65)} {
		if _, _, err := db.CreateKey(ctx, bad, storage.Scope{}); !errors.Is(err, storage.ErrBadKeyName) {
			t.Errorf("CreateKey(%q): %v, want ErrBadKeyName", bad, err)
		}
	}
	clk.Advance(time.Second)
	b, _, err := db.CreateKey(ctx, "b", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	got, err := db.Authenticate(ctx, secret)
	if err != nil || got.ID != a.ID || !got.LastUsed.Equal(clk.Now()) {
		t.Errorf("Authenticate = %+v, %v; want key %s used now", got, err, a.ID)
	}
	for _, s := range []string{"", "bnr_nope", secret + "x", strings.TrimPrefix(secret, storage.KeyPrefix)} {
		if _, err := db.Authenticate(ctx, s); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Authenticate(%q): %v, want ErrNotFound", s, err)
		}
	}
	keys, err := db.Keys(ctx)
	if err != nil || len(keys) != 2 || keys[0].ID != a.ID || keys[1].ID != b.ID || !keys[0].LastUsed.Equal(clk.Now()) || !keys[1].LastUsed.IsZero() {
		t.Errorf("Keys = %+v, %v; want ci (used now), then b (never used)", keys, err)
	}
	if k, err := db.Key(ctx, b.ID); err != nil || k.Name != "b" {
		t.Errorf("Key(%s) = %+v, %v", b.ID, k, err)
	}
	if k, err := db.RevokeKey(ctx, "ci"); err != nil || k.ID != a.ID {
		t.Errorf("RevokeKey(ci) = %+v, %v", k, err)
	}
	if _, err := db.Authenticate(ctx, secret); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Authenticate after revoking: %v, want ErrNotFound", err)
	}
	if k, err := db.RevokeKey(ctx, b.ID); err != nil || k.Name != "b" {
		t.Errorf("RevokeKey(id) = %+v, %v", k, err)
	}
	for _, id := range []string{a.ID, b.ID} {
		if _, err := db.Key(ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Key(%s) after revoking: %v, want ErrNotFound", id, err)
		}
		if _, err := db.RevokeKey(ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("RevokeKey(%s) twice: %v, want ErrNotFound", id, err)
		}
	}
}

// testKeyLastUsed: every method that returns a key shows its last use
// alike, whether the engine has written it yet or holds it in memory
// (spec §1: a use costs no write).
func testKeyLastUsed(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := open(t, Config{Now: clk.Now})
	k, secret, err := db.CreateKey(ctx, "ci", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if _, err := db.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	used := clk.Now()
	clk.Advance(time.Second)
	if got, err := db.Key(ctx, k.ID); err != nil || !got.LastUsed.Equal(used) {
		t.Errorf("Key(%s) after Authenticate = %+v, %v; want LastUsed %v", k.ID, got, err, used)
	}
	if keys, err := db.Keys(ctx); err != nil || len(keys) != 1 || !keys[0].LastUsed.Equal(used) {
		t.Errorf("Keys after Authenticate = %+v, %v; want LastUsed %v", keys, err, used)
	}
	if got, err := db.RevokeKey(ctx, k.ID); err != nil || !got.LastUsed.Equal(used) {
		t.Errorf("RevokeKey(%s) after Authenticate = %+v, %v; want LastUsed %v", k.ID, got, err, used)
	}
}

func testMaxPerInboxAtDelivery(t *testing.T, open Opener) {
	clk := NewClock(time.Unix(1_700_000_000, 0))
	db := open(t, Config{Now: clk.Now, Retention: storage.Retention{MaxPerInbox: 3}})
	for i := range 5 {
		deliver(t, db, fmt.Sprint("m", i), "cap@x.org", "other@x.org")
		clk.Advance(time.Second)
	}
	for _, inbox := range []string{"cap", "other"} {
		if got := ListSubjects(t, db, storage.Query{LocalPart: inbox}); !slices.Equal(got, []string{"m4", "m3", "m2"}) {
			t.Errorf("List(%s) with a cap of 3 = %q, want the 3 newest", inbox, got)
		}
	}
	// What the cap deleted is counted out too, and an inbox under it is
	// left alone.
	deliver(t, db, "one", "small@x.org")
	if got := inboxCounts(t, db); !maps.Equal(got, map[string]int{"cap": 3, "other": 3, "small": 1}) {
		t.Errorf("Inboxes counts = %v, want cap:3 other:3 small:1", got)
	}
	if st, err := db.Stats(context.Background()); err != nil || st.Emails != 7 || st.Inboxes != 3 {
		t.Errorf("Stats = %+v, %v; want 7 emails in 3 inboxes", st, err)
	}
}

func testSweep(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock(time.Unix(1_700_000_000, 0))
	db := open(t, Config{Now: clk.Now, Retention: storage.Retention{MaxAge: time.Hour}})
	deliver(t, db, "old", "s@x.org", "t@x.org")
	clk.Advance(50 * time.Minute)
	deliver(t, db, "new", "s@x.org")
	clk.Advance(11 * time.Minute)
	if n, err := db.Sweep(ctx); err != nil || n != 2 {
		t.Errorf("Sweep = %d, %v; want the 2 emails older than an hour", n, err)
	}
	if got := ListSubjects(t, db, storage.Query{LocalPart: "s"}); !slices.Equal(got, []string{"new"}) {
		t.Errorf("List(s) after Sweep = %q, want [new]", got)
	}
	if n, err := db.Sweep(ctx); err != nil || n != 0 {
		t.Errorf("second Sweep = %d, %v; want 0", n, err)
	}
	// A store at its cap (kept at delivery) gives Sweep nothing to do; a
	// lowered cap is the engine's to test, as the cap is set at open.
	capped := open(t, Config{Now: clk.Now, Retention: storage.Retention{MaxPerInbox: 2}})
	for i := range 4 {
		deliver(t, capped, fmt.Sprint("c", i), "c@x.org")
	}
	if n, err := capped.Sweep(ctx); err != nil || n != 0 {
		t.Errorf("Sweep of a store kept at its cap = %d, %v; want 0", n, err)
	}
	if got := ListSubjects(t, capped, storage.Query{LocalPart: "c"}); !slices.Equal(got, []string{"c3", "c2"}) {
		t.Errorf("List(c) with a cap of 2 = %q, want [c3 c2]", got)
	}
}

// testAttachments: an index is shared by the emails of a message and goes
// with the last of them.
func testAttachments(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	es := deliver(t, db, "files", "a@x.org", "b@x.org")
	if _, ok, err := db.Attachments(ctx, es[0].ID); ok || err != nil {
		t.Errorf("Attachments before any Put = %v, %v; want none stored", ok, err)
	}
	idx := storage.Attachments{Files: []storage.Attachment{{Filename: "a.pdf", ContentType: "application/pdf", Size: 3}, {Filename: "b.png", ContentType: "image/png", ContentID: "cid1", Size: 0}}, More: 2, Partial: true, Rules: 7}
	if err := db.PutAttachments(ctx, es[0].ID, idx); err != nil {
		t.Fatal(err)
	}
	got, ok, err := db.Attachments(ctx, es[1].ID)
	if err != nil || !ok || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", idx) {
		t.Errorf("Attachments of the other copy = %+v, %v, %v; want %+v", got, ok, err, idx)
	}
	if err := db.Delete(ctx, es[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Attachments(ctx, es[1].ID); !ok || err != nil {
		t.Errorf("Attachments after deleting one copy: %v, %v; want kept", ok, err)
	}
	if err := db.Delete(ctx, es[1].ID); err != nil {
		t.Fatal(err)
	}
	again := deliver(t, db, "files", "a@x.org")
	if _, ok, err := db.Attachments(ctx, again[0].ID); ok || err != nil {
		t.Errorf("Attachments of a new message = %v, %v; want none", ok, err)
	}
	for _, id := range []string{es[1].ID, "junk", "{" + again[0].ID + "}"} {
		if _, _, err := db.Attachments(ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Attachments(%s): %v, want ErrNotFound", id, err)
		}
		if err := db.PutAttachments(ctx, id, idx); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("PutAttachments(%s): %v, want ErrNotFound", id, err)
		}
	}
}

func testStatsAndInboxes(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock(time.Unix(1_700_000_000, 0).UTC())
	db := open(t, Config{Now: clk.Now})
	if st, err := db.Stats(ctx); err != nil || st.Emails != 0 || st.Inboxes != 0 || !st.Oldest.IsZero() {
		t.Errorf("Stats of an empty store = %+v, %v", st, err)
	}
	deliver(t, db, "1", "Bob@x.org", "alice@x.org")
	clk.Advance(time.Minute)
	deliver(t, db, "2", "alice@x.org")
	if _, _, err := db.CreateKey(ctx, "k", storage.Scope{}); err != nil {
		t.Fatal(err)
	}
	st, err := db.Stats(ctx)
	if err != nil || st.Emails != 3 || st.Inboxes != 2 || st.Keys != 1 || !st.Oldest.Equal(time.Unix(1_700_000_000, 0)) {
		t.Errorf("Stats = %+v, %v; want 3 emails, 2 inboxes, 1 key, the oldest at the start", st, err)
	}
	ins, err := db.Inboxes(ctx)
	want := []storage.Inbox{{Name: "alice", Emails: 2, Newest: clk.Now()}, {Name: "bob", Emails: 1, Newest: time.Unix(1_700_000_000, 0).UTC()}}
	if err != nil || !slices.EqualFunc(ins, want, sameInbox) {
		t.Errorf("Inboxes = %v, %v; want %v", ins, err, want)
	}
	if err := db.CheckWritable(ctx); err != nil {
		t.Errorf("CheckWritable: %v", err)
	}
}

// sameInbox reports whether a and b are the same inbox, their times the
// same instant in whatever location.
func sameInbox(a, b storage.Inbox) bool {
	return a.Name == b.Name && a.Emails == b.Emails && a.Newest.Equal(b.Newest)
}

// testKeyWithSecret: a key made from a given secret (spec §14:
// BURNER_KEY) authenticates with it as any key does; the secret must be
// one burner could have made, and names one key only; KeyBySecret finds
// a key by its secret without counting a use, and a copy keeps it.
func testKeyWithSecret(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	db := open(t, Config{Now: clk.Now})
	secret := storage.KeyPrefix + strings.Repeat("Ab9-_", 9) // 45 characters
	k, err := db.CreateKeyWithSecret(ctx, " env ", storage.Scope{Inboxes: []string{"CI-*"}}, secret)
	if err != nil || k.Name != "env" || k.ID == "" || !k.Created.Equal(clk.Now()) || !k.LastUsed.IsZero() || !slices.Equal(k.Scope.Inboxes, []string{"ci-*"}) {
		t.Fatalf("CreateKeyWithSecret(env) = %+v, %v; want env, created now, never used, scope ci-*", k, err)
	}

	clk.Advance(time.Second)
	found, err := db.KeyBySecret(ctx, secret)
	if err != nil || found.ID != k.ID || !found.LastUsed.IsZero() || !slices.Equal(found.Scope.Inboxes, []string{"ci-*"}) {
		t.Errorf("KeyBySecret = %+v, %v; want env, never used", found, err)
	}
	if keys, err := db.Keys(ctx); err != nil || len(keys) != 1 || !keys[0].LastUsed.IsZero() {
		t.Errorf("Keys after KeyBySecret = %+v, %v; want env, never used: KeyBySecret is no use", keys, err)
	}
	got, err := db.Authenticate(ctx, secret)
	if err != nil || got.ID != k.ID || !got.LastUsed.Equal(clk.Now()) {
		t.Errorf("Authenticate with the given secret = %+v, %v; want env, used now", got, err)
	}
	used := clk.Now()
	clk.Advance(time.Second)
	if found, err := db.KeyBySecret(ctx, secret); err != nil || !found.LastUsed.Equal(used) {
		t.Errorf("KeyBySecret after Authenticate = %+v, %v; want LastUsed %v, as Key shows it", found, err, used)
	}

	// A made key is found by its secret too.
	made, madeSecret, err := db.CreateKey(ctx, "made", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if found, err := db.KeyBySecret(ctx, madeSecret); err != nil || found.ID != made.ID {
		t.Errorf("KeyBySecret of a made key = %+v, %v; want %s", found, err, made.ID)
	}
	for _, s := range []string{"", "bnr_nope", secret + "x", strings.TrimPrefix(secret, storage.KeyPrefix), storage.KeyPrefix + strings.Repeat("b", 43)} {
		if k, err := db.KeyBySecret(ctx, s); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("KeyBySecret(%q) = %+v, %v; want ErrNotFound", s, k, err)
		}
	}

	// The name and the secret are each one key's.
	if k, err := db.CreateKeyWithSecret(ctx, "env", storage.Scope{}, storage.KeyPrefix+strings.Repeat("c", 43)); !errors.Is(err, storage.ErrKeyExists) {
		t.Errorf("CreateKeyWithSecret of a taken name = %+v, %v; want ErrKeyExists", k, err)
	}
	if k, err := db.CreateKeyWithSecret(ctx, "other", storage.Scope{}, secret); !errors.Is(err, storage.ErrKeyExists) {
		t.Errorf("CreateKeyWithSecret of a taken secret = %+v, %v; want ErrKeyExists", k, err)
	}
	if k, err := db.CreateKeyWithSecret(ctx, "other", storage.Scope{}, madeSecret); !errors.Is(err, storage.ErrKeyExists) {
		t.Errorf("CreateKeyWithSecret of a made key's secret = %+v, %v; want ErrKeyExists", k, err)
	}
	for _, bad := range []string{"", "bnr_", storage.KeyPrefix + strings.Repeat("a", 42), strings.Repeat("a", 47),
		"BNR_" + strings.Repeat("a", 43), storage.KeyPrefix + strings.Repeat("a", 42) + "=", storage.KeyPrefix + strings.Repeat("a", 42) + "+",
		storage.KeyPrefix + strings.Repeat("a", 42) + "/", storage.KeyPrefix + " " + strings.Repeat("a", 43), storage.KeyPrefix + strings.Repeat("é", 43)} {
		if k, err := db.CreateKeyWithSecret(ctx, "bad", storage.Scope{}, bad); !errors.Is(err, storage.ErrBadSecret) {
			t.Errorf("CreateKeyWithSecret with secret %q = %+v, %v; want ErrBadSecret", bad, k, err)
		}
	}
	other := storage.KeyPrefix + strings.Repeat("d", 60)
	if _, err := db.CreateKeyWithSecret(ctx, "", storage.Scope{}, other); !errors.Is(err, storage.ErrBadKeyName) {
		t.Errorf("CreateKeyWithSecret without a name: %v, want ErrBadKeyName", err)
	}
	if _, err := db.CreateKeyWithSecret(ctx, "bad", storage.Scope{Inboxes: []string{"a b"}}, other); !errors.Is(err, storage.ErrBadInboxPattern) {
		t.Errorf("CreateKeyWithSecret with a bad pattern: %v, want ErrBadInboxPattern", err)
	}
	if keys, err := db.Keys(ctx); err != nil || len(keys) != 2 {
		t.Errorf("after the refusals, Keys = %d keys, %v; want env and made", len(keys), err)
	}
	long, err := db.CreateKeyWithSecret(ctx, "long", storage.Scope{Metrics: true}, other)
	if err != nil || !long.Scope.Metrics {
		t.Errorf("CreateKeyWithSecret with a 60-character metrics secret = %+v, %v", long, err)
	}

	dst := open(t, Config{Now: clk.Now})
	if _, err := dst.Import(ctx, db, nil); err != nil {
		t.Fatalf("Import: %v", err)
	}
	if found, err := dst.KeyBySecret(ctx, secret); err != nil || found.ID != k.ID || found.Name != "env" {
		t.Errorf("KeyBySecret on a copy = %+v, %v; want env", found, err)
	}

	if _, err := db.RevokeKey(ctx, "env"); err != nil {
		t.Fatal(err)
	}
	if k, err := db.KeyBySecret(ctx, secret); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("KeyBySecret after RevokeKey = %+v, %v; want ErrNotFound", k, err)
	}
	if _, err := db.CreateKeyWithSecret(ctx, "env", storage.Scope{}, secret); err != nil {
		t.Errorf("CreateKeyWithSecret again after RevokeKey: %v", err)
	}
}
