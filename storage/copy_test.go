package storage

import (
	"errors"
	"slices"
	"testing"
)

// TestStoredKeyClean: an import takes a key only as a store could have
// made it, with its scope in the form CleanScope gives.
func TestStoredKeyClean(t *testing.T) {
	good := StoredKey{Key: Key{ID: "k1", Name: "ci", Scope: Scope{Inboxes: []string{"CI-*", "ci-*", "Alice"}, ReadOnly: true}}}
	sk, err := good.Clean()
	if err != nil || !slices.Equal(sk.Key.Scope.Inboxes, []string{"ci-*", "alice"}) || !sk.Key.Scope.ReadOnly || sk.Key.ID != "k1" {
		t.Errorf("Clean(%+v) = %+v, %v; want the scope [ci-* alice], read-only", good, sk, err)
	}
	for _, tc := range []struct {
		k    Key
		want error
	}{
		{Key{ID: "k1", Name: ""}, ErrBadKeyName},
		{Key{ID: "", Name: "ci"}, ErrBadKeyName},
		{Key{ID: "k1", Name: "ci", Scope: Scope{Inboxes: []string{"a b"}}}, ErrBadInboxPattern},
	} {
		if _, err := (StoredKey{Key: tc.k}).Clean(); !errors.Is(err, tc.want) {
			t.Errorf("Clean(%+v) = %v, want %v", tc.k, err, tc.want)
		}
	}
}
