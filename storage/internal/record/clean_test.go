package record

import (
	"errors"
	"slices"
	"testing"

	"burner/storage"
)

// TestCleanKey: an import takes a key only as a store could have made it,
// with its scope in the form storage.CleanScope gives.
func TestCleanKey(t *testing.T) {
	good := storage.StoredKey{Key: storage.Key{ID: "k1", Name: "ci", Scope: storage.Scope{Inboxes: []string{"CI-*", "ci-*", "Alice"}, ReadOnly: true}}}
	sk, err := CleanKey(good)
	if err != nil || !slices.Equal(sk.Key.Scope.Inboxes, []string{"ci-*", "alice"}) || !sk.Key.Scope.ReadOnly || sk.Key.ID != "k1" {
		t.Errorf("CleanKey(%+v) = %+v, %v; want the scope [ci-* alice], read-only", good, sk, err)
	}
	for _, tc := range []struct {
		k    storage.Key
		want error
	}{
		{storage.Key{ID: "k1", Name: ""}, storage.ErrBadKeyName},
		{storage.Key{ID: "", Name: "ci"}, storage.ErrBadKeyName},
		{storage.Key{ID: "k1", Name: "ci", Scope: storage.Scope{Inboxes: []string{"a b"}}}, storage.ErrBadInboxPattern},
	} {
		if _, err := CleanKey(storage.StoredKey{Key: tc.k}); !errors.Is(err, tc.want) {
			t.Errorf("CleanKey(%+v) = %v, want %v", tc.k, err, tc.want)
		}
	}
}
