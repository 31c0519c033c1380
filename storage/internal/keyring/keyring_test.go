package keyring

import (
	"testing"
	"time"

	"burner/storage"
)

// TestUsage: a use replaces only an earlier one, in memory and when a
// failed flush gives its times back; Apply never moves a key's last use
// back.
func TestUsage(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var u Usage
	u.Note("a", t0.Add(time.Hour))
	u.Note("a", t0) // a clock stepped back
	k := storage.Key{ID: "a"}
	u.Apply(&k)
	if !k.LastUsed.Equal(t0.Add(time.Hour)) {
		t.Errorf("after uses at +1h then +0: LastUsed %v, want +1h", k.LastUsed)
	}
	stored := storage.Key{ID: "a", LastUsed: t0.Add(2 * time.Hour)}
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
	c := storage.Key{ID: "c"}
	u.Forget(&c)
	if !c.LastUsed.Equal(t0) || u.Take() != nil {
		t.Errorf("Forget: LastUsed %v, and the use is still held", c.LastUsed)
	}
}
