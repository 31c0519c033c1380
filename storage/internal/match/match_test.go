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

// TestMatchSender: the sender filter takes a substring of the name or of
// the address, folded, never of the two together nor of other fields;
// with it, MatchFields decides without the text.
func TestMatchSender(t *testing.T) {
	subject := []byte("Your code")
	for _, tc := range []struct {
		from string
		want bool
	}{
		{"", true},
		{"STRASSE", true},      // the name, folded
		{"shop.EXAMPLE", true}, // the address
		{"Straße Shop", true},
		{"shop hello", false}, // across name and address
		{"code", false},       // the subject is not the sender
	} {
		m := New(storage.Query{From: tc.from})
		ok, needText := m.MatchFields(subject, []byte("Straße Shop"), []byte("hello@shop.example"))
		if ok != tc.want || needText {
			t.Errorf("From %q: MatchFields = %v, %v; want %v, false", tc.from, ok, needText, tc.want)
		}
		if got := m.MatchSender([]byte("Straße Shop"), []byte("hello@shop.example")); got != tc.want {
			t.Errorf("From %q: MatchSender = %v, want %v", tc.from, got, tc.want)
		}
	}
	// With a search term, the folded sender still serves the term.
	m := New(storage.Query{From: "shop", Terms: []string{"HELLO@"}})
	if ok, needText := m.MatchFields(subject, []byte("Straße Shop"), []byte("hello@shop.example")); !ok || needText {
		t.Errorf("From shop, term HELLO@: MatchFields = %v, %v; want true, false", ok, needText)
	}
}
