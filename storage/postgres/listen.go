package postgres

import (
	"context"
	"strings"
	"time"

	"burner/storage"

	"github.com/jackc/pgx/v5"
)

// channel is the NOTIFY channel of deliveries. A payload is the id of the
// node that committed, a tab, and the inboxes the commit delivered to, one
// a line; or the node's id, a tab and "*" when they would not fit in a
// payload (8000 bytes): every waiter then wakes and lists again.
const channel = "burner_mail"

// maxPayload keeps a payload below PostgreSQL's 8000 bytes.
const maxPayload = 7900

// payload returns the payload of a notification of names (inboxes on
// channel, email ids on authChannel) from this node.
func (db *DB) payload(names []string) string {
	n := len(db.node) + 1
	for _, in := range names {
		n += len(in) + 1
	}
	if n > maxPayload {
		return db.node + "\t*"
	}
	return db.node + "\t" + strings.Join(names, "\n")
}

// heard returns the names of a payload from another node, or all when
// they did not fit; ok is false for this node's own payloads, whose
// waiters it woke at commit, and for one it cannot read.
func (db *DB) heard(payload string) (names []string, all, ok bool) {
	node, rest, ok := strings.Cut(payload, "\t")
	if !ok || node == db.node {
		return nil, false, false
	}
	if rest == "*" {
		return nil, true, true
	}
	return strings.Split(rest, "\n"), false, true
}

// Changed returns a channel that is closed once an email for the inbox
// localPart has been committed after the call, on this node or any other
// (storage.Engine), or when the notifications of other nodes may have been
// lost: a waiter then lists again and finds nothing new.
func (db *DB) Changed(localPart string) <-chan struct{} {
	db.waitedMu.Lock()
	db.waited[storage.InboxName(localPart)] = struct{}{}
	ch := db.changes.Changed(localPart)
	db.waitedMu.Unlock()
	return ch
}

// notify wakes the waiters of inbox.
func (db *DB) notify(inbox string) {
	db.waitedMu.Lock()
	delete(db.waited, inbox)
	db.changes.Notify(inbox)
	db.waitedMu.Unlock()
}

// wakeAll wakes every waiter: the notifications of other nodes may have
// been lost with the connection that listened for them.
func (db *DB) wakeAll() {
	db.wakeAllHooks()
	db.authChanges.NotifyAll()
	db.waitedMu.Lock()
	defer db.waitedMu.Unlock()
	for inbox := range db.waited {
		db.changes.Notify(inbox)
	}
	clear(db.waited)
}

// listen holds the node's one LISTEN connection and wakes the waiters of
// the inboxes other nodes deliver to, and of the verdicts they store
// (auth.go). When the connection is lost it
// wakes every waiter, so that none sleeps through a delivery it could not
// hear of, and connects again, backing off up to maxBackoff. ready
// receives the outcome of the first attempt: nil once LISTEN has taken
// effect, or why it failed.
func (db *DB) listen(ctx context.Context, cfg *pgx.ConnConfig, ready chan<- error) {
	defer db.wg.Done()
	first := true
	backoff := minBackoff
	for ctx.Err() == nil {
		err := db.listenOnce(ctx, cfg, func() {
			if first {
				ready <- nil
				first = false
			}
			backoff = minBackoff
		})
		if first {
			ready <- err
			first = false
		}
		if ctx.Err() != nil {
			return
		}
		db.wakeAll()
		db.log.Warn("database notifications lost; reconnecting", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// listenOnce connects, listens and wakes waiters until the connection
// fails or ctx is done. listening is called once LISTEN has taken effect.
func (db *DB) listenOnce(ctx context.Context, cfg *pgx.ConnConfig, listening func()) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+channel+"; LISTEN "+authChannel); err != nil {
		return err
	}
	// Deliveries of other nodes that committed while this node was not
	// listening were not heard: their waiters list again.
	db.wakeAll()
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		names, all, ok := db.heard(n.Payload)
		switch {
		case !ok:
		case n.Channel == authChannel && all:
			db.authChanges.NotifyAll()
		case n.Channel == authChannel:
			for _, id := range names {
				db.authChanges.Notify(id)
			}
		case all:
			db.wakeAll()
		default:
			for _, inbox := range names {
				db.notify(inbox)
			}
			db.wakeHooks(names)
		}
	}
}
