package commit

import (
	"sync"
	"time"
)

// Later gathers writes that may wait for a commit, such as the verdicts
// of spec §12, which are off the SMTP path: each waits at most Delay,
// for a commit that takes it (Take) or else for Due, which the first Add
// after an empty spell schedules. So under load they ride in few commits,
// and alone one waits Delay. Set Delay and Due before the first Add.
type Later[T any] struct {
	Delay time.Duration
	// Due runs in its own goroutine Delay after the Add that scheduled
	// it; it commits what Take gives, or leads a commit that does.
	Due func()

	mu        sync.Mutex
	items     []T
	scheduled bool
}

// Add queues x for a commit.
func (l *Later[T]) Add(x T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, x)
	if !l.scheduled {
		l.scheduled = true
		time.AfterFunc(l.Delay, l.due)
	}
}

func (l *Later[T]) due() {
	l.mu.Lock()
	l.scheduled = false
	l.mu.Unlock()
	l.Due()
}

// Take returns the writes waiting, for the commit about to run, and
// forgets them.
func (l *Later[T]) Take() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	items := l.items
	l.items = nil
	return items
}
