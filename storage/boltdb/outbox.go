package boltdb

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"burner/storage"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// The outbox layout (SPEC §9: the webhook events, written in the commit of
// their emails) is two buckets, outbox and outboxnew. The outbox holds
//
//	0x00 be64(seq)                                 -> event message record
//	hook 0x00 'n' be64(receivedAt ms) uuid(16)     -> event record, never retried
//	hook 0x00 'r' be64(receivedAt ms) uuid(16)     -> event record, retried
//	hook 0x00 'd' be64(next ms) be64(receivedAt ms) uuid(16) -> empty
//
// and outboxnew, the newest events and messages, keyed as the 0x00 and 'n'
// ranges are. A hook id is not empty and holds no 0x00, so "a" 0x00
// prefixes the keys of hook "a" only, and the keys that start with 0x00
// are the messages'.
//
// What a delivery adds costs the pages it rewrites, and their fsync: in a
// bucket of many pages, the leaf it lands in and every branch page above
// it. So a delivery writes its events and message into outboxnew while
// they fit in it as a bbolt inline bucket (a quarter of a page, in the
// file's root page, which every commit rewrites anyway), and moves them all
// into the outbox when they no longer do: the outbox's pages are rewritten
// once for every few deliveries rather than for each. In the outbox, new
// events and messages append at the end of their ranges. outboxnew stays
// empty while the root page has too little room for it (stagedRoom): a
// root page that splits stays split, which would cost every commit a page
// or two.
//
// An event moves to the 'r' range, with a due key in the 'd' range, when
// its first failure is written (flushOutbox), which is off the path of
// the 250. ClaimEvents merges the 'n' range, due by receivedAt, with the
// 'd' range, by due time, and stops at the first event not due: it reads
// no event waiting for a later retry; then it reads the few in outboxnew.
// Both 'n' and 'r' sort by receivedAt, so DropEvents stops at the first
// event it keeps in each.
//
// An event's identity, the key of its lease and of its outcome not yet
// written, is hook 0x00 be64(receivedAt ms) uuid: what storage.Event
// carries, whichever range or bucket holds it.
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
// with the s2 block of an event message record inline.
//
// What the recipients of one message share (sender, subject and body, up to
// the body cap of 1 MiB) is written once per Deliver, for all its events,
// as an event message record: uvarint(refs) then one s2 block of
//
//	flags(1) uvarint-prefixed: from, fromName, subject, body
//
// where refs counts the events that point to it: a message to 100
// recipients and 2 hooks costs 200 small event records and one compressed
// body, which the last event removed takes with it. Its seq is outboxnew's
// sequence; it is in either bucket, whichever holds its events. It is the
// email as it was stored, kept apart from the email's own content record
// so that an email deleted before it is sent is still sent (SPEC §9).
//
// Schema version 6 kept the events, their due keys and the messages in
// three buckets (events, eventsdue, eventmsgs), so that a delivery
// rewrote a leaf and its branches in two of them; migrate.go moves them
// into the outbox.
var (
	bucketOutbox    = []byte("outbox")
	bucketOutboxNew = []byte("outboxnew")
)

// The kinds of outbox keys, after the hook id and its 0x00.
const (
	kindDue   = 'd'
	kindNew   = 'n'
	kindRetry = 'r'
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
	leases map[string]time.Time // event identity -> end of its lease
	ops    map[string]outboxOp  // event identity -> outcome not yet written
	gen    uint64               // numbers the ops, so that a flush removes only those it wrote
	retry  int                  // how many of the ops are retries
	added  storage.Notifier     // woken, per hook id, after a commit that adds events
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

// outboxFlushInterval is how often outcomes are written (see outbox).
const outboxFlushInterval = time.Second

// outboxFlushOps is how many outcomes not yet written make the flusher
// write them before the second is over. ClaimEvents skips the events
// settled but not written, which are the first of their range, one by
// one: with a fast receiver, a second of them made claims cost more CPU
// than the deliveries they serve, while a commit for every few hundred
// outcomes costs ingest little.
const outboxFlushOps = 256

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

// msgKey returns the key of the event message of seq mkey.
func msgKey(mkey []byte) []byte { return append([]byte{0}, mkey...) }

// eventKey returns the identity of an event, hook 0x00 be64(receivedAt ms)
// uuid; hook ends in 0x00.
func eventKey(hook []byte, received time.Time, id uuid.UUID) []byte {
	k := make([]byte, 0, len(hook)+24)
	k = append(k, hook...)
	k = binary.BigEndian.AppendUint64(k, uint64(received.UnixMilli()))
	return append(k, id[:]...)
}

// outboxKey returns the key of kind kindNew or kindRetry of the event
// whose identity is ident, with a hook prefix (0x00 included) n bytes long.
func outboxKey(kind byte, ident []byte, n int) []byte {
	k := make([]byte, 0, len(ident)+1)
	k = append(k, ident[:n]...)
	k = append(k, kind)
	return append(k, ident[n:]...)
}

// dueKey returns the due key of the event whose identity is ident, with a
// hook prefix (0x00 included) n bytes long, due at next.
func dueKey(ident []byte, n int, next time.Time) []byte {
	k := make([]byte, 0, len(ident)+9)
	k = append(k, ident[:n]...)
	k = append(k, kindDue)
	k = binary.BigEndian.AppendUint64(k, uint64(next.UnixMilli()))
	return append(k, ident[n:]...)
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

// splitEventKey returns the hook id, receivedAt and email id of an
// event's identity.
func splitEventKey(ident []byte) (hook string, received time.Time, id uuid.UUID, err error) {
	i := bytes.IndexByte(ident, 0)
	if i <= 0 || len(ident) != i+1+24 {
		return "", time.Time{}, uuid.UUID{}, errCorrupt
	}
	rest := ident[i+1:]
	return string(ident[:i]), time.UnixMilli(int64(binary.BigEndian.Uint64(rest))).UTC(), uuid.UUID(rest[8:24]), nil
}

// find returns the bucket, key and record of the event whose identity is
// ident, with a hook prefix n bytes long; a nil record when it is gone.
func (o boxes) find(ident []byte, n int) (b *bolt.Bucket, key, v []byte) {
	key = outboxKey(kindNew, ident, n)
	if v = o.main.Get(key); v != nil {
		return o.main, key, v
	}
	if v = o.staged.Get(key); v != nil {
		return o.staged, key, v
	}
	key[n] = kindRetry
	return o.main, key, o.main.Get(key)
}

// msg returns the bucket and record of the event message of seq mkey.
func (o boxes) msg(mkey []byte) (*bolt.Bucket, []byte) {
	k := msgKey(mkey)
	if v := o.staged.Get(k); v != nil {
		return o.staged, v
	}
	return o.main, o.main.Get(k)
}

// remove removes the event record at key in b, whose message is mkey
// (nil: inline), and the message with its last event. The caller removes
// its due key.
func (o boxes) remove(b *bolt.Bucket, key, mkey []byte) error {
	if err := b.Delete(key); err != nil || mkey == nil {
		return err
	}
	mb, m := o.msg(mkey)
	refs, w := binary.Uvarint(m)
	if w <= 0 || refs <= 1 {
		return mb.Delete(msgKey(mkey))
	}
	return mb.Put(msgKey(mkey), append(binary.AppendUvarint(nil, refs-1), m[w:]...))
}

// read decodes the event whose identity is ident, with v its record.
func (o boxes) read(ident, v []byte) (storage.Event, error) {
	hook, received, id, err := splitEventKey(ident)
	if err != nil {
		return storage.Event{}, err
	}
	r, err := decodeEventRecord(v)
	if err != nil {
		return storage.Event{}, err
	}
	block := r.inline
	if r.mkey != nil {
		_, m := o.msg(r.mkey)
		_, w := binary.Uvarint(m)
		if w <= 0 {
			return storage.Event{}, errCorrupt
		}
		block = m[w:]
	}
	d, err := s2.Decode(nil, block)
	if err != nil || len(d) < 1 {
		return storage.Event{}, errCorrupt
	}
	flags, rest := d[0], d[1:]
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

// eachEvent calls fn with the identity, kind (kindNew or kindRetry) and
// record of every event in b, one of the outbox's buckets, hook by hook.
func eachEvent(b *bolt.Bucket, fn func(ident []byte, kind byte, v []byte) error) error {
	cur := b.Cursor()
	for k, v := cur.Seek([]byte{1}); k != nil; { // past the messages
		i := bytes.IndexByte(k, 0)
		if i <= 0 || len(k) < i+2 {
			return fmt.Errorf("outbox key %x: %w", k, errCorrupt)
		}
		switch kind := k[i+1]; {
		case kind == kindDue:
			k, v = cur.Seek(append(bytes.Clone(k[:i+1]), kindNew))
			continue
		case kind != kindNew && kind != kindRetry || len(k) != i+2+24:
			return fmt.Errorf("outbox key %x: %w", k, errCorrupt)
		default:
			if err := fn(append(bytes.Clone(k[:i+1]), k[i+2:]...), kind, v); err != nil {
				return err
			}
		}
		k, v = cur.Next()
	}
	return nil
}

// each calls fn with the identity, kind and record of every event of
// the outbox, those of outboxnew last.
func (o boxes) each(fn func(ident []byte, kind byte, v []byte) error) error {
	if err := eachEvent(o.main, fn); err != nil {
		return err
	}
	return eachEvent(o.staged, fn)
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
		// An event never retried is due at its receivedAt, a retried one
		// at its due key: the two ranges merge by when they are due, and
		// the first event not due ends both.
		newPrefix, duePrefix := append(bytes.Clone(prefix), kindNew), append(bytes.Clone(prefix), kindDue)
		news, dues := o.main.Cursor(), o.main.Cursor()
		nk, _ := news.Seek(newPrefix)
		dk, _ := dues.Seek(duePrefix)
		ident := make([]byte, 0, n+24)
	scan:
		for len(out) < c.Max {
			if !bytes.HasPrefix(nk, newPrefix) {
				nk = nil
			} else if len(nk) != n+1+24 {
				return fmt.Errorf("event key %x: %w", nk, errCorrupt)
			}
			if !bytes.HasPrefix(dk, duePrefix) {
				dk = nil
			} else if len(dk) != n+1+32 {
				return fmt.Errorf("due key %x: %w", dk, errCorrupt)
			}
			switch {
			case nk != nil && (dk == nil || binary.BigEndian.Uint64(nk[n+1:]) <= binary.BigEndian.Uint64(dk[n+1:])):
				if int64(binary.BigEndian.Uint64(nk[n+1:])) > now {
					break scan
				}
				ident = append(append(ident[:0], prefix...), nk[n+1:]...)
				nk, _ = news.Next()
			case dk != nil:
				if int64(binary.BigEndian.Uint64(dk[n+1:])) > now {
					break scan
				}
				ident = append(append(ident[:0], prefix...), dk[n+9:]...)
				dk, _ = dues.Next()
			default:
				break scan
			}
			if err := claim(ident); err != nil {
				return err
			}
		}
		// The newest events, a quarter of a page of them at most.
		sc := o.staged.Cursor()
		for k, _ := sc.Seek(newPrefix); bytes.HasPrefix(k, newPrefix) && len(out) < c.Max; k, _ = sc.Next() {
			if len(k) != n+1+24 {
				return fmt.Errorf("event key %x: %w", k, errCorrupt)
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

// eventIdent returns the identity of e.
func eventIdent(e storage.Event) []byte {
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
			return nil, fmt.Errorf("outbox key %x: %w", k, errCorrupt)
		}
		switch kind := k[i+1]; {
		case kind == kindDue:
			k, _ = cur.Seek(append(bytes.Clone(k[:i+1]), kindNew))
			continue
		case kind != kindNew && kind != kindRetry || len(k) != i+2+24:
			return nil, fmt.Errorf("outbox key %x: %w", k, errCorrupt)
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

var _ storage.Outbox = (*DB)(nil)
