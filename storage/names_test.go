package storage

import (
	"errors"
	"strings"
	"testing"
)

func TestValidLocalPart(t *testing.T) {
	for s, want := range map[string]bool{
		"alice": true, "A.b-c_d+e": true, "0": true,
		"": false, "a b": false, "a@b": false, "ä": false, "a/b": false, "a\"b": false,
	} {
		if got := ValidLocalPart(s); got != want {
			t.Errorf("ValidLocalPart(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestStorableLocalPart(t *testing.T) {
	for s, want := range map[string]bool{
		strings.Repeat("a", MaxLocalPart): true, strings.Repeat("a", MaxLocalPart+1): false,
		"alice": true, "": false, "a b": false,
	} {
		if got := StorableLocalPart(s); got != want {
			t.Errorf("StorableLocalPart(%d bytes %.8q) = %v, want %v", len(s), s, got, want)
		}
	}
}

func TestParseIDCanonicalOnly(t *testing.T) {
	const id = "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"
	if u, err := ParseID(id); err != nil || u.String() != id {
		t.Errorf("ParseID(%q) = %v, %v", id, u, err)
	}
	for _, bad := range []string{"", "junk", "urn:uuid:" + id, "{" + id + "}", "8b0e2f0e6d7c4b1a9c395c2f0c4d8e11"} {
		if _, err := ParseID(bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("ParseID(%q): %v, want ErrNotFound", bad, err)
		}
	}
}
