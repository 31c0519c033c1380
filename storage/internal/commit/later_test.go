package commit

import (
	"testing"
	"time"
)

// TestLater: writes added together wait for one Due, which runs once
// Delay after the first; a Take before it leaves it nothing.
func TestLater(t *testing.T) {
	dues := make(chan []int, 4)
	var l Later[int]
	l.Delay = 20 * time.Millisecond
	l.Due = func() { dues <- l.Take() }
	start := time.Now()
	l.Add(1)
	l.Add(2)
	select {
	case got := <-dues:
		if len(got) != 2 || got[0] != 1 || got[1] != 2 || time.Since(start) < l.Delay {
			t.Errorf("Due took %v after %v, want [1 2] after at least %v", got, time.Since(start), l.Delay)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Due")
	}
	l.Add(3)
	if got, left := l.Take(), l.Take(); len(got) != 1 || got[0] != 3 || len(left) != 0 {
		t.Errorf("Take = %v, then %v; want [3], then nothing left", got, left)
	}
	select {
	case got := <-dues:
		if len(got) != 0 {
			t.Errorf("Due after a Take took %v, want nothing", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Due for the second Add")
	}
}
