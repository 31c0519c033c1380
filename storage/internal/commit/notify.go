package commit

import (
	"sync"

	"burner/storage"
)

// Notifier wakes the waiters of an inbox (a `wait` long poll, an event
// stream) when an email arrives in it. The zero value is ready to use; it
// is safe for concurrent use. An engine calls Notify after each commit.
// It keys its waiters by name, so it serves any name that, like an inbox
// name, is in one canonical form: an email's id, whose waiters wait for
// its authentication record (spec §12).
type Notifier struct {
	mu      sync.Mutex
	waiting map[string]chan struct{} // inbox name -> closed at its next delivery
}

// Changed returns a channel that is closed at the first Notify of the
// inbox of localPart after the call. All the waiters of an inbox share one
// channel, so a thousand of them cost one.
func (n *Notifier) Changed(localPart string) <-chan struct{} {
	inbox := storage.InboxName(localPart)
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.waiting[inbox]
	if !ok {
		if n.waiting == nil {
			n.waiting = make(map[string]chan struct{})
		}
		ch = make(chan struct{})
		n.waiting[inbox] = ch
	}
	return ch
}

// Notify wakes the waiters of the inbox named inbox (storage.InboxName). The next
// Changed makes a new channel, so an inbox nobody waits on holds no memory.
func (n *Notifier) Notify(inbox string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.waiting[inbox]; ok {
		close(ch)
		delete(n.waiting, inbox)
	}
}

// ChangedID is Changed for the authentication record of email id, in
// the form Verdict.Notify names it, whatever form of a UUID id has.
func (n *Notifier) ChangedID(id string) <-chan struct{} {
	if uid, err := storage.ParseID(id); err == nil {
		id = uid.String()
	}
	return n.Changed(id)
}

// NotifyAll wakes every waiter, of every name: for an engine that may
// have missed notifications (its connection to the other nodes lost).
func (n *Notifier) NotifyAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, ch := range n.waiting {
		close(ch)
		delete(n.waiting, name)
	}
}
