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
