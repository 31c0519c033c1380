package boltdb

import (
	"bytes"
	"encoding/binary"

	"burner/storage"

	bolt "go.etcd.io/bbolt"
)

// planEvents fills d.events and d.eventMsg for the emails of d to the
// hooks of db that cover their inboxes, in the caller's goroutine.
func (db *DB) planEvents(d *delivery, msg *storage.Message, locals []string) {
	if len(db.hooks) == 0 {
		return
	}
	for i, local := range locals {
		for _, h := range db.hooks {
			if h.Covers(local) {
				d.events = append(d.events, hookEvent{email: i, hook: append([]byte(h.ID), 0)})
			}
		}
	}
	if len(d.events) > 0 {
		d.eventMsg = encodeEventMsg(msg)
	}
}

// putEvents writes the events of d in tx, after put has decided the
// receivedAt of its emails: each is due at once.
func (d *delivery) putEvents(tx *bolt.Tx) error {
	o := outboxOf(tx)
	var kvs [][2][]byte
	var mkey []byte
	if len(d.events) > 1 {
		seq, err := o.staged.NextSequence()
		if err != nil {
			return err
		}
		mkey = be64(seq)
		rec := binary.AppendUvarint(make([]byte, 0, 10+len(d.eventMsg)), uint64(len(d.events)))
		kvs = append(kvs, [2][]byte{msgKey(mkey), append(rec, d.eventMsg...)})
	}
	for _, ev := range d.events {
		t := d.times[ev.email]
		key := outboxKey(kindNew, eventKey(ev.hook, t, d.ids[ev.email]), len(ev.hook))
		if mkey == nil {
			kvs = append(kvs, [2][]byte{key, encodeEventInline(0, t, d.to[ev.email], d.eventMsg)})
		} else {
			kvs = append(kvs, [2][]byte{key, encodeEvent(0, t, mkey, d.to[ev.email])})
		}
	}
	size := 0
	for _, kv := range kvs {
		size += inlineElement + len(kv[0]) + len(kv[1])
	}
	room, used := stagedRoom(tx), inlineSize(o.staged)
	if used+size > room && used > 0 {
		if err := o.moveStaged(); err != nil {
			return err
		}
	}
	b := o.staged
	if size > room {
		b = o.main
		// New events and messages append at the end of their ranges: a
		// leaf that splits is never written again, so it can be full.
		b.FillPercent = 1.0
	}
	for _, kv := range kvs {
		if err := b.Put(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// The sizes bbolt gives a page header and a leaf element; an inline
// bucket holds at most a quarter of a page, its header included.
const (
	inlineHeader  = 16
	inlineElement = 16
)

// inlineSize returns the bytes the elements of the inline bucket b take.
func inlineSize(b *bolt.Bucket) int {
	n := 0
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		n += inlineElement + len(k) + len(v)
	}
	return n
}

// stagedRoom returns how many bytes of elements outboxnew may hold in tx:
// what keeps it inline, and the root page, which holds it, below three
// quarters full (for what the rest of the commit adds), or nothing.
func stagedRoom(tx *bolt.Tx) int {
	page := tx.DB().Info().PageSize
	root := inlineHeader
	c := tx.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		root += inlineElement + len(k) + inlineHeader // the bucket header
		if bytes.Equal(k, bucketOutboxNew) {
			continue
		}
		if b := tx.Bucket(k); b != nil && b.RootPage() == 0 {
			root += inlineHeader + inlineSize(b)
		}
	}
	return max(0, min(page/4, page*3/4-root)-inlineHeader)
}

// boxes are the outbox's two buckets in a transaction.
type boxes struct{ main, staged *bolt.Bucket }

func outboxOf(tx *bolt.Tx) boxes {
	return boxes{main: tx.Bucket(bucketOutbox), staged: tx.Bucket(bucketOutboxNew)}
}

// moveStaged moves what outboxnew holds into the outbox.
func (o boxes) moveStaged() error {
	o.main.FillPercent = 1.0 // see putEvents
	c := o.staged.Cursor()
	for k, v := c.First(); k != nil; k, v = c.First() {
		if err := o.main.Put(bytes.Clone(k), bytes.Clone(v)); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
