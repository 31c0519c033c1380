// Package commit is what both engines keep around their commits:
// deliveries that share one (Group), the waiters woken after one
// (Notifier), and whether the last one failed (Health).
package commit

import "sync"

// Group lets concurrent writers share commits, as both engines'
// Deliver do (spec §2: the 250 only after a durable commit, and one commit
// per message would cap ingest at the disk's or the database's commit
// rate). A writer that finds no commit running leads one: it commits every
// item queued, its own included, at most Max of them. Items that arrive
// meanwhile queue, and the first of them leads the next commit once this
// one has returned. Nobody waits for company (unlike bbolt's DB.Batch,
// which waits up to 10 ms): alone, an item commits at once; under load, a
// commit takes all that queued while the last one ran. The zero value is
// ready to use.
type Group[T comparable] struct {
	Max int // items in one commit; 0 means no bound

	mu      sync.Mutex
	queue   []queued[T]
	leading bool // a commit is running, and its leader will hand on
}

// queued is an item waiting for a commit: its channel receives true when
// it is to lead the next commit, false when a commit has included it.
type queued[T comparable] struct {
	item T
	turn chan bool
}

// Do returns once a commit that included item has run, led by this
// goroutine (which calls commit with the batch) or by another. commit
// reports each item's outcome in the item itself; it runs in one goroutine
// at a time.
func (g *Group[T]) Do(item T, commit func(batch []T)) {
	q := queued[T]{item: item, turn: make(chan bool, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, q)
	if g.leading {
		g.mu.Unlock()
		if lead := <-q.turn; !lead {
			return
		}
		g.mu.Lock()
	}
	g.leading = true
	n := len(g.queue)
	if g.Max > 0 {
		n = min(n, g.Max)
	}
	taken := g.queue[:n:n]
	g.queue = append([]queued[T](nil), g.queue[n:]...)
	g.mu.Unlock()

	defer func() {
		// Hand on, even after a panic: the queue must not wait for a
		// leader that is gone.
		g.mu.Lock()
		if len(g.queue) > 0 {
			g.queue[0].turn <- true
		} else {
			g.leading = false
		}
		g.mu.Unlock()
		for _, o := range taken {
			if o.item != item {
				o.turn <- false
			}
		}
	}()
	batch := make([]T, len(taken))
	for i, o := range taken {
		batch[i] = o.item
	}
	commit(batch)
}
