package commit

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestGroupCommit: items that queue while a commit runs share the next
// commits, at most Max to each, each item in exactly one, and every Do
// returns only once its item was committed.
func TestGroup(t *testing.T) {
	g := &Group[int]{Max: 4}
	var (
		mu        sync.Mutex
		batches   [][]int
		committed = map[int]bool{}
	)
	release := make(chan struct{})
	commit := func(batch []int) {
		if slices.Contains(batch, 0) {
			<-release // the first commit runs until all the others have queued
		}
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, slices.Clone(batch))
		for _, v := range batch {
			committed[v] = true
		}
	}
	var wg sync.WaitGroup
	done := func(v int) {
		defer wg.Done()
		g.Do(v, commit)
		mu.Lock()
		defer mu.Unlock()
		if !committed[v] {
			t.Errorf("Do(%d) returned before its item was committed", v)
		}
	}
	wg.Add(1)
	go done(0)
	queued := func() (int, bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue), g.leading
	}
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		if n, leading := queued(); n == 0 && leading {
			break // item 0 leads, and its commit waits
		}
		if time.Now().After(deadline) {
			t.Fatal("the first item did not start its commit within 10 s")
		}
	}
	const n = 10
	for v := 1; v <= n; v++ {
		wg.Add(1)
		go done(v)
	}
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		if q, _ := queued(); q == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d items queued after 10 s, want %d", len(g.queue), n)
		}
	}
	close(release)
	wg.Wait()
	var sizes []int
	seen := map[int]int{}
	for _, b := range batches {
		sizes = append(sizes, len(b))
		for _, v := range b {
			seen[v]++
		}
	}
	if !slices.Equal(sizes, []int{1, 4, 4, 2}) {
		t.Errorf("commits of %v items, want [1 4 4 2]: the first alone, then the queue in batches of at most Max", sizes)
	}
	for v := 0; v <= n; v++ {
		if seen[v] != 1 {
			t.Errorf("item %d was in %d commits, want 1", v, seen[v])
		}
	}
	if q, leading := queued(); q != 0 || leading {
		t.Errorf("after the commits: %d queued, leading %v; want the lead given up", q, leading)
	}
}
