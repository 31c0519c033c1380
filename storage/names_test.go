package storage

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
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

func TestNotifierForgetsWokenInboxes(t *testing.T) {
	var n Notifier
	a, b := n.Changed("Alice"), n.Changed("bob")
	if n.Changed("alice") != a {
		t.Error("Changed(Alice) and Changed(alice) differ")
	}
	n.Notify(InboxName("ALICE"))
	select {
	case <-a:
	default:
		t.Error("Notify(alice) left Changed(Alice) open")
	}
	select {
	case <-b:
		t.Error("Notify(alice) closed Changed(bob)")
	default:
	}
	n.mu.Lock()
	held := len(n.waiting)
	n.mu.Unlock()
	if held != 1 {
		t.Errorf("%d inboxes held after waking alice, want 1 (bob)", held)
	}
}

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
		if _, err := ParseID(id.String()); err != nil {
			t.Fatalf("ParseID(%s): %v", id, err)
		}
		prev = id
	}
}
