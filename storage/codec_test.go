package storage

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestStringLists: a header section and a string list read back as they
// were written, with what follows them; damage is ErrCorrupt, never a
// panic or a huge allocation.
func TestStringLists(t *testing.T) {
	hs := []Header{{Name: "Subject", Value: "Grüße"}, {Name: "X-Tag", Value: "a\x00b"}}
	b := AppendHeaders(nil, hs)
	b = AppendStrings(b, []string{"https://a.test/", ""})
	b = append(b, "tail"...)

	section, rest, ok := CutHeaders(b)
	if !ok {
		t.Fatalf("CutHeaders(%q) failed", b)
	}
	m := NewMatcher(Query{Header: &Header{Name: "x-tag", Value: "\x00b"}})
	if got, err := m.MatchHeaders(section); err != nil || !got {
		t.Errorf("MatchHeaders for x-tag: %v, %v; want true", got, err)
	}
	m = NewMatcher(Query{Header: &Header{Name: "subject", Value: Fold("GRÜSSE")}})
	if got, err := m.MatchHeaders(section); err != nil || !got {
		t.Errorf("MatchHeaders for subject: %v, %v; want true", got, err)
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
		if _, err := DecodeStrings(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeStrings(%q): %v, want ErrCorrupt", bad, err)
		}
		if _, err := m.MatchHeaders(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("MatchHeaders(%q): %v, want ErrCorrupt", bad, err)
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

// TestKeyUsage: a use replaces only an earlier one, in memory and when a
// failed flush gives its times back; Apply never moves a key's last use
// back.
func TestKeyUsage(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var u KeyUsage
	u.Note("a", t0.Add(time.Hour))
	u.Note("a", t0) // a clock stepped back
	k := Key{ID: "a"}
	u.Apply(&k)
	if !k.LastUsed.Equal(t0.Add(time.Hour)) {
		t.Errorf("after uses at +1h then +0: LastUsed %v, want +1h", k.LastUsed)
	}
	stored := Key{ID: "a", LastUsed: t0.Add(2 * time.Hour)}
	u.Apply(&stored)
	if !stored.LastUsed.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("Apply moved a stored last use of +2h back to %v", stored.LastUsed)
	}

	pending := u.Take()
	if len(pending) != 1 || u.Take() != nil {
		t.Fatalf("Take = %v, then not empty", pending)
	}
	u.Note("a", t0.Add(3*time.Hour)) // a use during the failed flush
	u.Note("b", t0)
	u.Restore(pending)
	got := u.Take()
	if !got["a"].Equal(t0.Add(3*time.Hour)) || !got["b"].Equal(t0) || len(got) != 2 {
		t.Errorf("after Restore: %v; want a at +3h and b at +0", got)
	}

	u.Note("c", t0)
	c := Key{ID: "c"}
	u.Forget(&c)
	if !c.LastUsed.Equal(t0) || u.Take() != nil {
		t.Errorf("Forget: LastUsed %v, and the use is still held", c.LastUsed)
	}
}
