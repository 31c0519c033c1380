package boltdb

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"burner/storage"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// outboxFlushInterval is how often outcomes are written (see outbox).
const outboxFlushInterval = time.Second

// outboxFlushOps is how many outcomes not yet written make the flusher
// write them before the second is over. ClaimEvents skips the events
// settled but not written, which are the first of their range, one by
// one: with a fast receiver, a second of them made claims cost more CPU
// than the deliveries they serve, while a commit for every few hundred
// outcomes costs ingest little.
const outboxFlushOps = 256

// CompleteEvent removes e from the outbox within outboxFlushInterval
// (storage.Outbox); ClaimEvents never returns it again.
func (db *DB) CompleteEvent(ctx context.Context, e storage.Event) error {
	return db.settle(ctx, e, outboxOp{done: true})
}

// RetryEvent stores e.Attempts and next within outboxFlushInterval
// (storage.Outbox); ClaimEvents returns e again once next has come.
func (db *DB) RetryEvent(ctx context.Context, e storage.Event, next time.Time) error {
	return db.settle(ctx, e, outboxOp{attempts: e.Attempts, next: next.UTC().Truncate(time.Millisecond)})
}

func (db *DB) settle(ctx context.Context, e storage.Event, op outboxOp) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := uuid.Parse(e.Email.ID); err != nil {
		return fmt.Errorf("settle event %s: %w", e.Email.ID, storage.ErrNotFound)
	}
	ident := string(eventIdent(e))
	o := &db.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops = make(map[string]outboxOp)
	}
	old, ok := o.ops[ident]
	if old.done {
		return nil // gone already: a retry must not bring it back
	}
	if ok {
		o.retry--
	}
	if !op.done {
		o.retry++
	}
	o.gen++
	op.gen = o.gen
	o.ops[ident] = op
	if len(o.ops)%outboxFlushOps == 0 {
		select {
		case o.wake() <- struct{}{}:
		default: // a flush is due already
		}
	}
	delete(o.leases, ident)
	return nil
}

// flushOutbox writes the outcomes held in memory, in one transaction. An
// event's first failure moves it to the 'r' range, with a due key.
func (db *DB) flushOutbox() error {
	ob := &db.outbox
	ob.mu.Lock()
	if len(ob.ops) == 0 {
		ob.mu.Unlock()
		return nil
	}
	ops := make(map[string]outboxOp, len(ob.ops))
	for k, op := range ob.ops {
		ops[k] = op
	}
	ob.mu.Unlock()
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		for k, op := range ops {
			ident := []byte(k)
			n := bytes.IndexByte(ident, 0) + 1
			b, key, v := o.find(ident, n)
			if v == nil {
				continue // dropped meanwhile
			}
			r, err := decodeEventRecord(v)
			if err != nil {
				return fmt.Errorf("event %x: %w", ident, err)
			}
			r.mkey = bytes.Clone(r.mkey)
			if key[n] == kindRetry {
				if err := o.main.Delete(dueKey(ident, n, r.next)); err != nil {
					return err
				}
			}
			if op.done {
				if err := o.remove(b, key, r.mkey); err != nil {
					return err
				}
				continue
			}
			rec := r.encode(op.attempts, op.next)
			if key[n] == kindNew {
				if err := b.Delete(key); err != nil {
					return err
				}
			}
			if err := o.main.Put(outboxKey(kindRetry, ident, n), rec); err != nil {
				return err
			}
			if err := o.main.Put(dueKey(ident, n, op.next), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write webhook outcomes: %w", err)
	}
	ob.mu.Lock()
	for k, op := range ops {
		if ob.ops[k].gen == op.gen {
			delete(ob.ops, k)
			if !op.done {
				ob.retry--
			}
		}
	}
	ob.mu.Unlock()
	return nil
}

func (db *DB) flushOutboxEvery(every time.Duration) {
	defer db.flushed.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	db.outbox.mu.Lock()
	full := db.outbox.wake()
	db.outbox.mu.Unlock()
	for {
		select {
		case <-db.stop:
			return
		case <-t.C:
		case <-full:
		}
		// A failed flush keeps its ops, for the next one.
		_ = db.flushOutbox()
	}
}
