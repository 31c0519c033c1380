package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"burner/storage"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// The outbox layout (SPEC §9: the webhook events, written in the commit of
// their emails):
//
//	events:    hook 0x00 be64(receivedAt unix ms) uuid(16)             -> event record
//	eventsdue: hook 0x00 be64(next unix ms) be64(receivedAt ms) uuid(16) -> empty
//	eventmsgs: be64(seq)                                                -> event message record
//
// A hook id holds no 0x00, so "a" 0x00 prefixes the keys of hook "a" only.
// Within a hook, events sort by receivedAt, so the oldest is the first key
// and DropEvents stops at the first one it keeps; eventsdue sorts them by
// when they are due, so ClaimEvents reads only what is due.
//
// An event record is
//
//	version(1) uvarint(attempts) be64(next unix ms) be64(message seq) uvarint-prefixed to
//
// or, for the only event of its delivery, which shares its message with
// no other (version eventInline),
//
//	version(1) uvarint(attempts) be64(next unix ms) uvarint-prefixed to, s2 block
//
// with the s2 block of an event message record inline: the commit then
// writes no eventmsgs page for it.
//
// What the recipients of one message share (sender, subject and body, up to
// the body cap of 1 MiB) is written once per Deliver, for all its events,
// as an event message record: uvarint(refs) then one s2 block of
//
//	flags(1) uvarint-prefixed: from, fromName, subject, body
//
// where refs counts the events that point to it: a message to 100
// recipients and 2 hooks costs 200 small event records and one compressed
// body, which the last event removed takes with it. It is the email as it
// was stored, kept apart from the email's own content record so that an
// email deleted before it is sent is still sent (SPEC §9).
var (
	bucketEvents    = []byte("events")
	bucketEventsDue = []byte("eventsdue")
	bucketEventMsgs = []byte("eventmsgs")
)

const (
	eventVersion    = 1
	eventInline     = 2      // the event message inline (schema version 6)
	eventHasSubject = 1 << 0 // event message flags
	eventHasBody    = 1 << 1
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
// sent again, which at-least-once delivery allows (SPEC §9: repeats happen
// after a crash).
type outbox struct {
	mu     sync.Mutex
	leases map[string]time.Time // events key -> end of its lease
	ops    map[string]outboxOp  // events key -> outcome not yet written
	gen    uint64               // numbers the ops, so that a flush removes only those it wrote
	added  storage.Notifier     // woken, per hook id, after a commit that adds events
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

// outboxFlushInterval is how often outcomes are written (see outbox).
const outboxFlushInterval = time.Second

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

func encodeEventMsg(msg *storage.Message) []byte {
	var flags byte
	subject, body := "", ""
	if msg.Subject != nil {
		flags |= eventHasSubject
		subject = *msg.Subject
	}
	if msg.Body != nil {
		flags |= eventHasBody
		body = *msg.Body
	}
	b := make([]byte, 0, 1+len(msg.From)+len(msg.FromName)+len(subject)+len(body)+20)
	b = append(b, flags)
	for _, s := range []string{msg.From, msg.FromName, subject, body} {
		b = appendString(b, s)
	}
	return s2.Encode(nil, b)
}

// putEvents writes the events of d in tx, after put has decided the
// receivedAt of its emails: each is due at once.
func (d *delivery) putEvents(tx *bolt.Tx) error {
	events, due := tx.Bucket(bucketEvents), tx.Bucket(bucketEventsDue)
	if len(d.events) == 1 {
		ev := d.events[0]
		t := d.times[ev.email]
		key := eventKey(ev.hook, t, d.ids[ev.email])
		if err := events.Put(key, encodeEventInline(0, t, d.to[ev.email], d.eventMsg)); err != nil {
			return err
		}
		return due.Put(dueKey(key, len(ev.hook), t), nil)
	}
	msgs := tx.Bucket(bucketEventMsgs)
	seq, err := msgs.NextSequence()
	if err != nil {
		return err
	}
	mkey := be64(seq)
	rec := binary.AppendUvarint(make([]byte, 0, 10+len(d.eventMsg)), uint64(len(d.events)))
	if err := msgs.Put(mkey, append(rec, d.eventMsg...)); err != nil {
		return err
	}
	for _, ev := range d.events {
		t := d.times[ev.email]
		key := eventKey(ev.hook, t, d.ids[ev.email])
		if err := events.Put(key, encodeEvent(0, t, mkey, d.to[ev.email])); err != nil {
			return err
		}
		if err := due.Put(dueKey(key, len(ev.hook), t), nil); err != nil {
			return err
		}
	}
	return nil
}

// eventKey returns hook 0x00 be64(receivedAt ms) uuid; hook ends in 0x00.
func eventKey(hook []byte, received time.Time, id uuid.UUID) []byte {
	k := make([]byte, 0, len(hook)+24)
	k = append(k, hook...)
	k = binary.BigEndian.AppendUint64(k, uint64(received.UnixMilli()))
	return append(k, id[:]...)
}

// dueKey returns the eventsdue key of the events key key, whose hook
// prefix (with its 0x00) is n bytes long, due at next.
func dueKey(key []byte, n int, next time.Time) []byte {
	k := make([]byte, 0, len(key)+8)
	k = append(k, key[:n]...)
	k = binary.BigEndian.AppendUint64(k, uint64(next.UnixMilli()))
	return append(k, key[n:]...)
}

func encodeEvent(attempts int, next time.Time, mkey []byte, to string) []byte {
	b := make([]byte, 0, 1+10+16+len(to)+2)
	b = append(b, eventVersion)
	b = binary.AppendUvarint(b, uint64(attempts))
	b = binary.BigEndian.AppendUint64(b, uint64(next.UnixMilli()))
	b = append(b, mkey...)
	return appendString(b, to)
}

func encodeEventInline(attempts int, next time.Time, to string, msg []byte) []byte {
	b := make([]byte, 0, 1+10+8+len(to)+2+len(msg))
	b = append(b, eventInline)
	b = binary.AppendUvarint(b, uint64(attempts))
	b = binary.BigEndian.AppendUint64(b, uint64(next.UnixMilli()))
	b = appendString(b, to)
	return append(b, msg...)
}

// eventRecord is an event record decoded.
type eventRecord struct {
	attempts int
	next     time.Time
	mkey     []byte // the shared message's key; nil when inline
	to       string
	inline   []byte // the message's s2 block when inline
}

// encode returns the record of r with attempts and next.
func (r eventRecord) encode(attempts int, next time.Time) []byte {
	if r.mkey == nil {
		return encodeEventInline(attempts, next, r.to, r.inline)
	}
	return encodeEvent(attempts, next, r.mkey, r.to)
}

func decodeEventRecord(v []byte) (eventRecord, error) {
	if len(v) >= 1 && v[0] == eventInline {
		n, w := binary.Uvarint(v[1:])
		if w <= 0 || len(v) < 1+w+8 {
			return eventRecord{}, errCorrupt
		}
		rest := v[1+w:]
		r := eventRecord{attempts: int(n), next: time.UnixMilli(int64(binary.BigEndian.Uint64(rest))).UTC()}
		to, msg, ok := cutString(rest[8:])
		if !ok {
			return eventRecord{}, errCorrupt
		}
		r.to, r.inline = string(to), msg
		return r, nil
	}
	if len(v) < 1 || v[0] != eventVersion {
		return eventRecord{}, errCorrupt
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || len(v) < 1+w+16 {
		return eventRecord{}, errCorrupt
	}
	rest := v[1+w:]
	r := eventRecord{attempts: int(n), next: time.UnixMilli(int64(binary.BigEndian.Uint64(rest))).UTC(), mkey: rest[8:16]}
	to, _, ok := cutString(rest[16:])
	if !ok {
		return eventRecord{}, errCorrupt
	}
	r.to = string(to)
	return r, nil
}

// splitEventKey returns the hook id, receivedAt and email id of an events
// key.
func splitEventKey(key []byte) (hook string, received time.Time, id uuid.UUID, err error) {
	i := bytes.IndexByte(key, 0)
	if i < 0 || len(key) != i+1+24 {
		return "", time.Time{}, uuid.UUID{}, errCorrupt
	}
	rest := key[i+1:]
	return string(key[:i]), time.UnixMilli(int64(binary.BigEndian.Uint64(rest))).UTC(), uuid.UUID(rest[8:24]), nil
}

// readEvent decodes the event at key, with v its record.
func readEvent(tx *bolt.Tx, key, v []byte) (storage.Event, error) {
	hook, received, id, err := splitEventKey(key)
	if err != nil {
		return storage.Event{}, err
	}
	r, err := decodeEventRecord(v)
	if err != nil {
		return storage.Event{}, err
	}
	block := r.inline
	if r.mkey != nil {
		m := tx.Bucket(bucketEventMsgs).Get(r.mkey)
		_, w := binary.Uvarint(m)
		if w <= 0 {
			return storage.Event{}, errCorrupt
		}
		block = m[w:]
	}
	b, err := s2.Decode(nil, block)
	if err != nil || len(b) < 1 {
		return storage.Event{}, errCorrupt
	}
	flags, rest := b[0], b[1:]
	var fields [4][]byte
	for i := range fields {
		var ok bool
		if fields[i], rest, ok = cutString(rest); !ok {
			return storage.Event{}, errCorrupt
		}
	}
	e := storage.Email{ID: id.String(), To: r.to, From: string(fields[0]), FromName: string(fields[1]), ReceivedAt: received}
	if flags&eventHasSubject != 0 {
		s := string(fields[2])
		e.Subject = &s
	}
	if flags&eventHasBody != 0 {
		s := string(fields[3])
		e.Body = &s
	}
	return storage.Event{Hook: hook, Email: e, Attempts: r.attempts, Next: r.next}, nil
}

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
	o := &db.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []storage.Event
	now := c.Now.UnixMilli()
	free := func(key string) bool {
		end, leased := o.leases[key]
		return !leased || !c.Now.Before(end)
	}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		events := tx.Bucket(bucketEvents)
		claim := func(key []byte) error {
			v := events.Get(key)
			if v == nil {
				return nil // dropped
			}
			e, err := readEvent(tx, key, v)
			if err != nil {
				return fmt.Errorf("event %x: %w", key, err)
			}
			out = append(out, e)
			return nil
		}
		cur := tx.Bucket(bucketEventsDue).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < c.Max; k, _ = cur.Next() {
			if len(k) != len(prefix)+32 {
				return fmt.Errorf("due key %x: %w", k, errCorrupt)
			}
			if int64(binary.BigEndian.Uint64(k[len(prefix):])) > now {
				break
			}
			key := append(bytes.Clone(prefix), k[len(prefix)+8:]...)
			if _, pending := o.ops[string(key)]; pending || !free(string(key)) {
				continue
			}
			if err := claim(key); err != nil {
				return err
			}
		}
		// Events retried but not yet written are due by their op.
		for key, op := range o.ops {
			if len(out) >= c.Max {
				break
			}
			if op.done || op.next.After(c.Now) || !free(key) || !bytes.HasPrefix([]byte(key), prefix) {
				continue
			}
			n := len(out)
			if err := claim([]byte(key)); err != nil {
				return err
			}
			if len(out) > n {
				out[n].Attempts, out[n].Next = op.attempts, op.next
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim events of hook %s: %w", c.Hook, err)
	}
	if o.leases == nil {
		o.leases = make(map[string]time.Time)
	}
	for _, e := range out {
		o.leases[string(outboxKey(e))] = c.Now.Add(c.Lease)
	}
	return out, nil
}

// outboxKey returns the events key of e.
func outboxKey(e storage.Event) []byte {
	id, _ := uuid.Parse(e.Email.ID)
	return eventKey(append([]byte(e.Hook), 0), e.Email.ReceivedAt, id)
}

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
	key := string(outboxKey(e))
	o := &db.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops = make(map[string]outboxOp)
	}
	if o.ops[key].done {
		return nil // gone already: a retry must not bring it back
	}
	o.gen++
	op.gen = o.gen
	o.ops[key] = op
	delete(o.leases, key)
	return nil
}

// flushOutbox writes the outcomes held in memory, in one transaction.
func (db *DB) flushOutbox() error {
	o := &db.outbox
	o.mu.Lock()
	if len(o.ops) == 0 {
		o.mu.Unlock()
		return nil
	}
	ops := make(map[string]outboxOp, len(o.ops))
	for k, op := range o.ops {
		ops[k] = op
	}
	o.mu.Unlock()
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		events, due := tx.Bucket(bucketEvents), tx.Bucket(bucketEventsDue)
		for k, op := range ops {
			key := []byte(k)
			v := events.Get(key)
			if v == nil {
				continue // dropped meanwhile
			}
			r, err := decodeEventRecord(v)
			if err != nil {
				return fmt.Errorf("event %x: %w", key, err)
			}
			n := bytes.IndexByte(key, 0) + 1
			if err := due.Delete(dueKey(key, n, r.next)); err != nil {
				return err
			}
			if op.done {
				if err := deleteEvent(tx, key, r.mkey); err != nil {
					return err
				}
				continue
			}
			if err := events.Put(key, r.encode(op.attempts, op.next)); err != nil {
				return err
			}
			if err := due.Put(dueKey(key, n, op.next), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write webhook outcomes: %w", err)
	}
	o.mu.Lock()
	for k, op := range ops {
		if o.ops[k].gen == op.gen {
			delete(o.ops, k)
		}
	}
	o.mu.Unlock()
	return nil
}

// deleteEvent removes the events record key, whose message is mkey (nil:
// inline), and the message with its last event. The caller removes its
// due key.
func deleteEvent(tx *bolt.Tx, key, mkey []byte) error {
	if err := tx.Bucket(bucketEvents).Delete(key); err != nil || mkey == nil {
		return err
	}
	msgs := tx.Bucket(bucketEventMsgs)
	m := msgs.Get(mkey)
	refs, w := binary.Uvarint(m)
	if w <= 0 || refs <= 1 {
		return msgs.Delete(mkey)
	}
	return msgs.Put(mkey, append(binary.AppendUvarint(nil, refs-1), m[w:]...))
}

func (db *DB) flushOutboxEvery(every time.Duration) {
	defer db.flushed.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-t.C:
			// A failed flush keeps its ops, for the next tick.
			_ = db.flushOutbox()
		}
	}
}

// dropBatch bounds the events one transaction of DropEvents removes.
const dropBatch = 10_000

// DropEvents removes the events of emails received before before, in
// transactions of at most dropBatch, and returns how many it removed by
// hook (storage.Outbox). It stops early when ctx is done.
func (db *DB) DropEvents(ctx context.Context, before time.Time) (map[string]int, error) {
	dropped := make(map[string]int)
	limit := uint64(before.UnixMilli())
	// An event settled but not yet written goes too, uncounted: its
	// outcome was logged and counted when it was settled.
	o := &db.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return dropped, err
		}
		n := 0
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			var keys [][]byte
			cur := tx.Bucket(bucketEvents).Cursor()
			for k, _ := cur.First(); k != nil && len(keys) < dropBatch; {
				i := bytes.IndexByte(k, 0)
				if i < 0 || len(k) != i+25 {
					return fmt.Errorf("event key %x: %w", k, errCorrupt)
				}
				if binary.BigEndian.Uint64(k[i+1:]) >= limit {
					// The rest of this hook's events are newer.
					k, _ = cur.Seek(append(bytes.Clone(k[:i]), 1))
					continue
				}
				keys = append(keys, bytes.Clone(k))
				k, _ = cur.Next()
			}
			events, due := tx.Bucket(bucketEvents), tx.Bucket(bucketEventsDue)
			for _, key := range keys {
				r, err := decodeEventRecord(events.Get(key))
				if err != nil {
					return fmt.Errorf("event %x: %w", key, err)
				}
				i := bytes.IndexByte(key, 0)
				if err := due.Delete(dueKey(key, i+1, r.next)); err != nil {
					return err
				}
				if err := deleteEvent(tx, key, r.mkey); err != nil {
					return err
				}
				if op, ok := o.ops[string(key)]; !ok || !op.done {
					dropped[string(key[:i])]++
				}
			}
			n = len(keys)
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
	o := &db.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []storage.HookWaiting
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		if b == nil { // a read-only open of a file without an outbox
			return nil
		}
		cur := b.Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			if op, ok := o.ops[string(k)]; ok && op.done {
				continue
			}
			hook, received, _, err := splitEventKey(k)
			if err != nil {
				return fmt.Errorf("event key %x: %w", k, err)
			}
			if len(out) == 0 || out[len(out)-1].Hook != hook {
				out = append(out, storage.HookWaiting{Hook: hook, Oldest: received})
			}
			out[len(out)-1].Events++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting events: %w", err)
	}
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

var _ storage.Outbox = (*DB)(nil)
