package storage

// Changed returns a channel that is closed once an email for the inbox
// localPart has been committed after the call. A waiter takes the channel
// first and then lists, so that no delivery slips between the two. All the
// waiters of an inbox share one channel, so a thousand of them cost one.
func (db *DB) Changed(localPart string) <-chan struct{} {
	inbox := string(inboxName(localPart))
	db.notifyMu.Lock()
	defer db.notifyMu.Unlock()
	ch, ok := db.waiting[inbox]
	if !ok {
		ch = make(chan struct{})
		db.waiting[inbox] = ch
	}
	return ch
}

// notify wakes the waiters of inbox. The next Changed makes a new channel,
// so an inbox nobody waits on holds no memory.
func (db *DB) notify(inbox string) {
	db.notifyMu.Lock()
	defer db.notifyMu.Unlock()
	if ch, ok := db.waiting[inbox]; ok {
		close(ch)
		delete(db.waiting, inbox)
	}
}
