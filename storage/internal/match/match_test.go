package match

import (
	"errors"
	"testing"

	"burner/storage"
	"burner/storage/internal/record"
)

// TestMatchHeaders: the header filter finds a field of an encoded header
// section by its name in any case and its value folded; a damaged section
// is storage.ErrCorrupt, never a panic.
func TestMatchHeaders(t *testing.T) {
	section := record.AppendHeaders(nil, []storage.Header{{Name: "Subject", Value: "Grüße"}, {Name: "X-Tag", Value: "a\x00b"}})
	m := New(storage.Query{Header: &storage.Header{Name: "x-tag", Value: "\x00b"}})
	if got, err := m.MatchHeaders(section); err != nil || !got {
		t.Errorf("MatchHeaders for x-tag: %v, %v; want true", got, err)
	}
	m = New(storage.Query{Header: &storage.Header{Name: "subject", Value: Fold("GRÜSSE")}})
	if got, err := m.MatchHeaders(section); err != nil || !got {
		t.Errorf("MatchHeaders for subject: %v, %v; want true", got, err)
	}
	for _, bad := range [][]byte{nil, {0x80}, {5, 1, 'a'}, {0xff, 0xff, 0xff, 0xff, 0x0f}, {1, 1, 'a'}} {
		if _, err := m.MatchHeaders(bad); !errors.Is(err, storage.ErrCorrupt) {
			t.Errorf("MatchHeaders(%q): %v, want ErrCorrupt", bad, err)
		}
	}
}
