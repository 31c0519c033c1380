package record

import (
	"bytes"
	"testing"

	"github.com/google/uuid"

	"burner/storage"
)

// TestNewIDVersion7: ids are of version 7 and, made one after another,
// only grow (spec §3), which is what lets an id index grow at its end.
func TestNewIDVersion7(t *testing.T) {
	prev := NewID()
	for range 10_000 {
		id := NewID()
		if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("NewID() = %s: version %d, variant %v; want 7, RFC 4122", id, id.Version(), id.Variant())
		}
		if bytes.Compare(id[:], prev[:]) <= 0 {
			t.Fatalf("NewID() = %s after %s: not greater", id, prev)
		}
		if _, err := storage.ParseID(id.String()); err != nil {
			t.Fatalf("ParseID(%s): %v", id, err)
		}
		prev = id
	}
}
