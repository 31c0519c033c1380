package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"burner/storage"
)

// testKeyScopes: a key's scope (spec §8) is stored with it in the form
// storage.CleanScope gives, every method that returns the key returns it,
// a key without one reaches every inbox and may delete, and a bad pattern
// is refused with nothing created.
func testKeyScopes(t *testing.T, open Opener) {
	db := open(t, Config{})
	ctx := context.Background()

	full, _, err := db.CreateKey(ctx, "full", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Scope.Inboxes) != 0 || full.Scope.ReadOnly {
		t.Errorf("CreateKey without a scope = %+v; want every inbox, read-write", full.Scope)
	}
	scoped, scopedSecret, err := db.CreateKey(ctx, "scoped", storage.Scope{Inboxes: []string{"Alice", " CI-* ", "alice", "bob+x"}})
	if err != nil {
		t.Fatal(err)
	}
	wantScoped := []string{"alice", "ci-*", "bob+x"}
	if !slices.Equal(scoped.Scope.Inboxes, wantScoped) || scoped.Scope.ReadOnly {
		t.Errorf("CreateKey(scoped).Scope = %+v; want %q, read-write (lower case, trimmed, no repeats, in order)", scoped.Scope, wantScoped)
	}
	ro, roSecret, err := db.CreateKey(ctx, "ro", storage.Scope{Inboxes: []string{"*"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ro.Scope.Inboxes, []string{"*"}) || !ro.Scope.ReadOnly {
		t.Errorf("CreateKey(ro).Scope = %+v; want *, read-only", ro.Scope)
	}

	want := map[string]storage.Scope{full.ID: full.Scope, scoped.ID: scoped.Scope, ro.ID: ro.Scope}
	same := func(what string, k storage.Key) {
		t.Helper()
		w, ok := want[k.ID]
		if !ok {
			t.Errorf("%s: key %+v was not created here", what, k)
			return
		}
		if !slices.Equal(k.Scope.Inboxes, w.Inboxes) || k.Scope.ReadOnly != w.ReadOnly {
			t.Errorf("%s: %s has scope %+v, want %+v", what, k.Name, k.Scope, w)
		}
	}
	for _, id := range []string{full.ID, scoped.ID, ro.ID} {
		k, err := db.Key(ctx, id)
		if err != nil {
			t.Fatalf("Key(%s): %v", id, err)
		}
		same("Key", k)
	}
	for _, secret := range []string{scopedSecret, roSecret} {
		k, err := db.Authenticate(ctx, secret)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		same("Authenticate", k)
	}
	keys, err := db.Keys(ctx)
	if err != nil || len(keys) != 3 {
		t.Fatalf("Keys = %+v, %v; want 3 keys", keys, err)
	}
	for _, k := range keys {
		same("Keys", k)
	}

	for _, bad := range [][]string{
		{""}, {" "}, {"a@b"}, {"**"}, {"*a"}, {"a*b"}, {"a**"}, {"ci-*", "x y"}, {"é"}, {"a\x00"},
		{strings.Repeat("a", 65)}, {strings.Repeat("a", 65) + "*"},
	} {
		if k, _, err := db.CreateKey(ctx, "bad", storage.Scope{Inboxes: bad}); !errors.Is(err, storage.ErrBadInboxPattern) {
			t.Errorf("CreateKey with patterns %q = %+v, %v; want ErrBadInboxPattern", bad, k, err)
		}
	}
	for _, good := range []string{strings.Repeat("a", 64), strings.Repeat("a", 64) + "*", "a.b_c-d+e*"} {
		k, _, err := db.CreateKey(ctx, "good "+good[len(good)-3:], storage.Scope{Inboxes: []string{good}})
		if err != nil || !slices.Equal(k.Scope.Inboxes, []string{good}) {
			t.Errorf("CreateKey with pattern %q = %+v, %v; want it taken as it is", good, k.Scope, err)
		}
		if err == nil {
			if _, err := db.RevokeKey(ctx, k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if keys, err := db.Keys(ctx); err != nil || len(keys) != 3 {
		t.Errorf("after refused patterns, Keys = %d keys, %v; want the 3 made before", len(keys), err)
	}

	k, err := db.RevokeKey(ctx, "scoped")
	if err != nil {
		t.Fatal(err)
	}
	same("RevokeKey", k)
}

// testMetricsKey: a key for metrics alone (spec §14) is stored as one,
// read-only and without patterns, every method that returns it says so,
// a copy carries it, and one with inbox patterns is refused with nothing
// created.
func testMetricsKey(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	prom, secret, err := db.CreateKey(ctx, "prom", storage.Scope{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	want := storage.Scope{Metrics: true, ReadOnly: true}
	check := func(what string, k storage.Key, err error) {
		t.Helper()
		if err != nil || k.ID != prom.ID || !k.Scope.Metrics || !k.Scope.ReadOnly || len(k.Scope.Inboxes) != 0 {
			t.Errorf("%s = %+v, %v; want key %s with scope %+v", what, k, err, prom.ID, want)
		}
		if k.Scope.Reaches("anyone") || k.Scope.Everywhere() {
			t.Errorf("%s: the metrics key's scope %+v reaches an inbox", what, k.Scope)
		}
	}
	check("CreateKey(prom, metrics)", prom, nil)
	k, err := db.Key(ctx, prom.ID)
	check("Key", k, err)
	k, err = db.Authenticate(ctx, secret)
	check("Authenticate", k, err)
	keys, err := db.Keys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("Keys = %+v, %v; want prom alone", keys, err)
	}
	check("Keys", keys[0], nil)

	// Asked read-write, it is read-only all the same.
	rw, _, err := db.CreateKey(ctx, "prom-rw", storage.Scope{Metrics: true, ReadOnly: false})
	if err != nil || !rw.Scope.Metrics || !rw.Scope.ReadOnly {
		t.Errorf("CreateKey(metrics, read-write) = %+v, %v; want a read-only metrics key", rw, err)
	}
	for _, inboxes := range [][]string{{"ci-*"}, {"*"}, {"bad pattern"}} {
		if k, _, err := db.CreateKey(ctx, "bad", storage.Scope{Metrics: true, Inboxes: inboxes}); err == nil {
			t.Errorf("CreateKey(metrics, %q) = %+v; want an error", inboxes, k)
		} else if inboxes[0] != "bad pattern" && !errors.Is(err, storage.ErrMetricsScope) {
			t.Errorf("CreateKey(metrics, %q): %v; want ErrMetricsScope", inboxes, err)
		}
	}
	if keys, err := db.Keys(ctx); err != nil || len(keys) != 2 {
		t.Errorf("after refused metrics keys, Keys = %d keys, %v; want the 2 made before", len(keys), err)
	}

	dst := open(t, Config{})
	if _, err := dst.Import(ctx, db, nil); err != nil {
		t.Fatalf("Import: %v", err)
	}
	k, err = dst.Key(ctx, prom.ID)
	check("Key on a copy", k, err)
	k, err = dst.Authenticate(ctx, secret)
	check("Authenticate on a copy", k, err)

	k, err = db.RevokeKey(ctx, "prom")
	check("RevokeKey", k, err)
}
