package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"strings"
	"time"

	"burner/storage"

	bolt "go.etcd.io/bbolt"
)

// ClaimEvents returns the due events of c.Hook not leased nor settled, and
// leases them to this process (storage.Outbox).
func (db *DB) ClaimEvents(ctx context.Context, c storage.Claim) ([]storage.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.Max <= 0 {
		return nil, nil
	}
	prefix := append([]byte(c.Hook), 0)
	n := len(prefix)
	ob := &db.outbox
	ob.mu.Lock()
	defer ob.mu.Unlock()
	var out []storage.Event
	now := c.Now.UnixMilli()
	free := func(ident []byte) bool {
		end, leased := ob.leases[string(ident)]
		return !leased || !c.Now.Before(end)
	}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		// claim reads the event whose identity is ident unless it is
		// settled or leased. The settled ones come first in their range
		// until the next flush: they are skipped without a copy.
		claim := func(ident []byte) error {
			if _, pending := ob.ops[string(ident)]; pending || !free(ident) {
				return nil
			}
			ident = bytes.Clone(ident)
			_, _, v := o.find(ident, n)
			if v == nil {
				return nil // dropped
			}
			e, err := o.read(ident, v)
			if err != nil {
				return fmt.Errorf("event %x: %w", ident, err)
			}
			out = append(out, e)
			return nil
		}
		for ident, err := range dueEvents(o.main, prefix, now) {
			if err != nil {
				return err
			}
			if err := claim(ident); err != nil {
				return err
			}
			if len(out) >= c.Max {
				break
			}
		}
		newPrefix := append(bytes.Clone(prefix), kindNew)
		ident := make([]byte, 0, n+24)
		// The newest events, a quarter of a page of them at most.
		sc := o.staged.Cursor()
		for k, _ := sc.Seek(newPrefix); bytes.HasPrefix(k, newPrefix) && len(out) < c.Max; k, _ = sc.Next() {
			if len(k) != n+1+24 {
				return fmt.Errorf("event key %x: %w", k, storage.ErrCorrupt)
			}
			if int64(binary.BigEndian.Uint64(k[n+1:])) > now {
				break
			}
			if err := claim(append(append(ident[:0], prefix...), k[n+1:]...)); err != nil {
				return err
			}
		}
		// Events retried but not yet written are due by their op; with
		// a fast receiver, the ops are all done, and none is read.
		for ident, op := range ob.ops {
			if len(out) >= c.Max || ob.retry == 0 {
				break
			}
			if op.done || op.next.After(c.Now) || !strings.HasPrefix(ident, string(prefix)) || !free([]byte(ident)) {
				continue
			}
			_, _, v := o.find([]byte(ident), n)
			if v == nil {
				continue // dropped
			}
			e, err := o.read([]byte(ident), v)
			if err != nil {
				return fmt.Errorf("event %x: %w", ident, err)
			}
			e.Attempts, e.Next = op.attempts, op.next
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim events of hook %s: %w", c.Hook, err)
	}
	if ob.leases == nil {
		ob.leases = make(map[string]time.Time)
	}
	for _, e := range out {
		ob.leases[string(eventIdent(e))] = c.Now.Add(c.Lease)
	}
	return out, nil
}

// dueEvents yields the identity of each event of the hook of prefix (its
// id and 0x00) in the outbox bucket b that is due at now (unix ms), in
// the order they fell due, and stops at the first one not due. An event
// never retried is due at its receivedAt, in the 'n' range, a retried one
// at its due key, in the 'd' range: the two ranges merge by when they are
// due, and the first event not due ends both, so that no event waiting
// for a later retry is read. An identity is valid until the next one is
// yielded; a damaged key is yielded as an error, and ends the sequence.
func dueEvents(b *bolt.Bucket, prefix []byte, now int64) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		n := len(prefix)
		newPrefix, duePrefix := append(bytes.Clone(prefix), kindNew), append(bytes.Clone(prefix), kindDue)
		news, dues := b.Cursor(), b.Cursor()
		nk, _ := news.Seek(newPrefix)
		dk, _ := dues.Seek(duePrefix)
		ident := make([]byte, 0, n+24)
		for {
			if !bytes.HasPrefix(nk, newPrefix) {
				nk = nil
			} else if len(nk) != n+1+24 {
				yield(nil, fmt.Errorf("event key %x: %w", nk, storage.ErrCorrupt))
				return
			}
			if !bytes.HasPrefix(dk, duePrefix) {
				dk = nil
			} else if len(dk) != n+1+32 {
				yield(nil, fmt.Errorf("due key %x: %w", dk, storage.ErrCorrupt))
				return
			}
			switch {
			case nk != nil && (dk == nil || binary.BigEndian.Uint64(nk[n+1:]) <= binary.BigEndian.Uint64(dk[n+1:])):
				if int64(binary.BigEndian.Uint64(nk[n+1:])) > now {
					return
				}
				ident = append(append(ident[:0], prefix...), nk[n+1:]...)
				nk, _ = news.Next()
			case dk != nil:
				if int64(binary.BigEndian.Uint64(dk[n+1:])) > now {
					return
				}
				ident = append(append(ident[:0], prefix...), dk[n+9:]...)
				dk, _ = dues.Next()
			default:
				return
			}
			if !yield(ident, nil) {
				return
			}
		}
	}
}
