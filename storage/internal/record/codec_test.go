package record

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"burner/storage"
)

// TestStringLists: a header section and a string list read back as they
// were written, with what follows them; damage is ErrCorrupt, never a
// panic or a huge allocation.
func TestStringLists(t *testing.T) {
	hs := []storage.Header{{Name: "Subject", Value: "Grüße"}, {Name: "X-Tag", Value: "a\x00b"}}
	b := AppendHeaders(nil, hs)
	b = AppendStrings(b, []string{"https://a.test/", ""})
	b = append(b, "tail"...)

	section, rest, ok := CutHeaders(b)
	if !ok {
		t.Fatalf("CutHeaders(%q) failed", b)
	}
	if !bytes.Equal(section, AppendHeaders(nil, hs)) {
		t.Errorf("CutHeaders = %q, want the section alone", section)
	}
	list, rest, ok := CutStrings(rest)
	if !ok || string(rest) != "tail" {
		t.Fatalf("CutStrings: ok %v, rest %q; want the tail", ok, rest)
	}
	if got, err := DecodeStrings(list); err != nil || !slices.Equal(got, []string{"https://a.test/", ""}) {
		t.Errorf("DecodeStrings = %q, %v", got, err)
	}
	if got, err := DecodeStrings(AppendStrings(nil, nil)); err != nil || got != nil {
		t.Errorf("DecodeStrings of an empty list = %#v, %v; want nil", got, err)
	}

	for _, bad := range [][]byte{nil, {0x80}, {5, 1, 'a'}, {0xff, 0xff, 0xff, 0xff, 0x0f}, append(AppendStrings(nil, []string{"a"}), 'x')} {
		if _, err := DecodeStrings(bad); !errors.Is(err, storage.ErrCorrupt) {
			t.Errorf("DecodeStrings(%q): %v, want ErrCorrupt", bad, err)
		}
	}
	if _, _, ok := CutHeaders([]byte{2, 1, 'a'}); ok {
		t.Errorf("CutHeaders of a cut section succeeded")
	}
	s, _, _ := CutString(AppendString(nil, "ab"))
	if cap(s) != 2 {
		t.Errorf("CutString gave a slice of capacity %d, want 2: an append would overwrite what follows", cap(s))
	}
}

func TestMilli(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.FixedZone("x", 3600))
	if got := Milli(at); !got.Equal(time.Date(2026, 1, 2, 2, 4, 5, 678_000_000, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("Milli(%v) = %v", at, got)
	}
	if f, c := FloorMilli(at), CeilMilli(at); c != f+1 || FromMilli(f) != Milli(at) {
		t.Errorf("FloorMilli, CeilMilli(%v) = %d, %d", at, f, c)
	}
	exact := Milli(at)
	if FloorMilli(exact) != CeilMilli(exact) {
		t.Errorf("a whole millisecond rounds two ways: %d, %d", FloorMilli(exact), CeilMilli(exact))
	}
	before := time.UnixMilli(-2).Add(-time.Microsecond)
	if FloorMilli(before) != -3 || CeilMilli(before) != -2 {
		t.Errorf("before 1970: FloorMilli %d, CeilMilli %d; want -3, -2", FloorMilli(before), CeilMilli(before))
	}
}
