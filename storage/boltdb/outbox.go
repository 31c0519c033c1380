package boltdb

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"burner/storage"
	"burner/storage/internal/commit"

	bolt "go.etcd.io/bbolt"
)

// outbox is what the DB holds in memory of its outbox: the leases, and the
// outcomes not yet written. bbolt allows one process per file, so a lease
// held in memory is held against every other claimer, and a crash, which
// forgets it, only makes the event due again, as an expired lease would.
//
// An outcome (CompleteEvent, RetryEvent) is written within a second, with
// every other outcome of that second, rather than in a commit of its own:
// an fsync per webhook sent would tax ingest, which shares the file's one
// writer. A crash may lose the outcomes of that second: their events are
// sent again, which at-least-once delivery allows (spec §9: repeats happen
// after a crash).
type outbox struct {
	mu     sync.Mutex
	leases map[string]time.Time // event identity -> end of its lease
	ops    map[string]outboxOp  // event identity -> outcome not yet written
	gen    uint64               // numbers the ops, so that a flush removes only those it wrote
	retry  int                  // how many of the ops are retries
	added  commit.Notifier      // woken, per hook id, after a commit that adds events
	full   chan struct{}        // wakes the flusher early; see outboxFlushOps
}

// wake returns the channel that wakes the flusher early. The caller holds
// o.mu.
func (o *outbox) wake() chan struct{} {
	if o.full == nil {
		o.full = make(chan struct{}, 1)
	}
	return o.full
}

// outboxOp is an outcome to write: remove the event, or store its attempts
// and next time.
type outboxOp struct {
	done     bool
	attempts int
	next     time.Time
	gen      uint64
}

// hookEvent is an event a delivery writes: for its i-th email, to a hook.
type hookEvent struct {
	email int
	hook  []byte // the hook id and 0x00
}

// dropBatch bounds the events one transaction of DropEvents removes.
const dropBatch = 10_000

// expiredEvents returns the keys of at most max events in b, one of the
// outbox's buckets, of emails received before limit (unix ms).
func expiredEvents(b *bolt.Bucket, limit uint64, max int) ([][]byte, error) {
	var keys [][]byte
	cur := b.Cursor()
	for k, _ := cur.Seek([]byte{1}); k != nil && len(keys) < max; { // past the messages
		i := bytes.IndexByte(k, 0)
		if i <= 0 || len(k) < i+2 {
			return nil, fmt.Errorf("outbox key %x: %w", k, storage.ErrCorrupt)
		}
		switch kind := k[i+1]; {
		case kind == kindDue:
			k, _ = cur.Seek(append(bytes.Clone(k[:i+1]), kindNew))
			continue
		case kind != kindNew && kind != kindRetry || len(k) != i+2+24:
			return nil, fmt.Errorf("outbox key %x: %w", k, storage.ErrCorrupt)
		case binary.BigEndian.Uint64(k[i+2:]) >= limit:
			// The rest of this range is newer: on to the next range, 'r'
			// after 'n', then the next hook's.
			k, _ = cur.Seek(append(bytes.Clone(k[:i+1]), kind+1))
			continue
		}
		keys = append(keys, bytes.Clone(k))
		k, _ = cur.Next()
	}
	return keys, nil
}

// DropEvents removes the events of emails received before before, in
// transactions of at most dropBatch, and returns how many it removed by
// hook (storage.Outbox). It stops early when ctx is done.
func (db *DB) DropEvents(ctx context.Context, before time.Time) (map[string]int, error) {
	dropped := make(map[string]int)
	limit := uint64(before.UnixMilli())
	// An event settled but not yet written goes too, uncounted: its
	// outcome was logged and counted when it was settled.
	ob := &db.outbox
	ob.mu.Lock()
	defer ob.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return dropped, err
		}
		n := 0
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			o := outboxOf(tx)
			for _, b := range []*bolt.Bucket{o.main, o.staged} {
				keys, err := expiredEvents(b, limit, dropBatch-n)
				if err != nil {
					return err
				}
				for _, key := range keys {
					r, err := decodeEventRecord(b.Get(key))
					if err != nil {
						return fmt.Errorf("event %x: %w", key, err)
					}
					r.mkey = bytes.Clone(r.mkey)
					i := bytes.IndexByte(key, 0)
					ident := append(bytes.Clone(key[:i+1]), key[i+2:]...)
					if key[i+1] == kindRetry {
						if err := o.main.Delete(dueKey(ident, i+1, r.next)); err != nil {
							return err
						}
					}
					if err := o.remove(b, key, r.mkey); err != nil {
						return err
					}
					if op, ok := ob.ops[string(ident)]; !ok || !op.done {
						dropped[string(key[:i])]++
					}
				}
				n += len(keys)
			}
			return nil
		})
		if err != nil {
			return dropped, fmt.Errorf("drop events: %w", err)
		}
		if n < dropBatch {
			return dropped, nil
		}
	}
}

// Waiting reports the events waiting, by hook (storage.Outbox).
func (db *DB) Waiting(ctx context.Context) ([]storage.HookWaiting, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ob := &db.outbox
	ob.mu.Lock()
	defer ob.mu.Unlock()
	byHook := make(map[string]*storage.HookWaiting)
	err := db.bolt.View(func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		if o.main == nil || o.staged == nil { // a read-only open of a file without an outbox
			return nil
		}
		return o.each(func(ident []byte, _ byte, _ []byte) error {
			if op, ok := ob.ops[string(ident)]; ok && op.done {
				return nil
			}
			hook, received, _, err := splitEventKey(ident)
			if err != nil {
				return fmt.Errorf("event %x: %w", ident, err)
			}
			w := byHook[hook]
			if w == nil {
				w = &storage.HookWaiting{Hook: hook, Oldest: received}
				byHook[hook] = w
			}
			w.Events++
			if received.Before(w.Oldest) {
				w.Oldest = received
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("waiting events: %w", err)
	}
	var out []storage.HookWaiting
	for _, w := range byHook {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b storage.HookWaiting) int { return cmp.Compare(a.Hook, b.Hook) })
	return out, nil
}

// EventsAdded returns a channel closed once an event for hook is committed
// after the call (storage.Outbox).
func (db *DB) EventsAdded(hook string) <-chan struct{} { return db.outbox.added.Changed(hook) }

// notifyEvents wakes the waiters of EventsAdded for the hooks of events.
func (db *DB) notifyEvents(events []hookEvent) {
	for i, ev := range events {
		if i == 0 || !bytes.Equal(ev.hook, events[i-1].hook) {
			db.outbox.added.Notify(storage.InboxName(string(ev.hook[:len(ev.hook)-1])))
		}
	}
}
