package boltdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// The outbox layout (spec §9: the webhook events, written in the commit of
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
// so that an email deleted before it is sent is still sent (spec §9).
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
	return record.AppendString(b, to)
}

func encodeEventInline(attempts int, next time.Time, to string, msg []byte) []byte {
	b := make([]byte, 0, 1+10+8+len(to)+2+len(msg))
	b = append(b, eventInline)
	b = binary.AppendUvarint(b, uint64(attempts))
	b = binary.BigEndian.AppendUint64(b, uint64(next.UnixMilli()))
	b = record.AppendString(b, to)
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
			return eventRecord{}, storage.ErrCorrupt
		}
		rest := v[1+w:]
		r := eventRecord{attempts: int(n), next: time.UnixMilli(int64(binary.BigEndian.Uint64(rest))).UTC()}
		to, msg, ok := record.CutString(rest[8:])
		if !ok {
			return eventRecord{}, storage.ErrCorrupt
		}
		r.to, r.inline = string(to), msg
		return r, nil
	}
	if len(v) < 1 || v[0] != eventVersion {
		return eventRecord{}, storage.ErrCorrupt
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || len(v) < 1+w+16 {
		return eventRecord{}, storage.ErrCorrupt
	}
	rest := v[1+w:]
	r := eventRecord{attempts: int(n), next: time.UnixMilli(int64(binary.BigEndian.Uint64(rest))).UTC(), mkey: rest[8:16]}
	to, _, ok := record.CutString(rest[16:])
	if !ok {
		return eventRecord{}, storage.ErrCorrupt
	}
	r.to = string(to)
	return r, nil
}

// splitEventKey returns the hook id, receivedAt and email id of an
// event's identity.
func splitEventKey(ident []byte) (hook string, received time.Time, id uuid.UUID, err error) {
	i := bytes.IndexByte(ident, 0)
	if i <= 0 || len(ident) != i+1+24 {
		return "", time.Time{}, uuid.UUID{}, storage.ErrCorrupt
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
			return storage.Event{}, storage.ErrCorrupt
		}
		block = m[w:]
	}
	d, err := s2.Decode(nil, block)
	if err != nil || len(d) < 1 {
		return storage.Event{}, storage.ErrCorrupt
	}
	flags, rest := d[0], d[1:]
	var fields [4][]byte
	for i := range fields {
		var ok bool
		if fields[i], rest, ok = record.CutString(rest); !ok {
			return storage.Event{}, storage.ErrCorrupt
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
			return fmt.Errorf("outbox key %x: %w", k, storage.ErrCorrupt)
		}
		switch kind := k[i+1]; {
		case kind == kindDue:
			k, v = cur.Seek(append(bytes.Clone(k[:i+1]), kindNew))
			continue
		case kind != kindNew && kind != kindRetry || len(k) != i+2+24:
			return fmt.Errorf("outbox key %x: %w", k, storage.ErrCorrupt)
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
		b = record.AppendString(b, s)
	}
	return s2.Encode(nil, b)
}

// eventIdent returns the identity of e.
func eventIdent(e storage.Event) []byte {
	id, _ := uuid.Parse(e.Email.ID)
	return eventKey(append([]byte(e.Hook), 0), e.Email.ReceivedAt, id)
}
