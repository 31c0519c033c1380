package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/text/cases"
)

// The email layout:
//
//	emails:   lower(localpart) 0x00 be64(receivedAt unix ms) be64(seq) -> email record
//	ids:      uuid (16 bytes)                                         -> emails key
//	contents: be64(content seq)                                       -> content record
//	raw:      be64(content seq)                                       -> the message as received
//
// A local part never contains 0x00, so "alice" 0x00 is a prefix of alice's
// keys only (not of "alice+x" or "alicf"), and within it keys sort by time,
// then by seq, the emails bucket's sequence at commit: listing newest first is
// a seek past the prefix and a walk backwards that reads only what it returns.
//
// The body, search text and raw source are stored once per message and
// shared by its recipients' emails (a content record counts its references),
// so a message to 100 recipients does not cost 100 copies.
//
// An email record is
//
//	version(1) flags(1) id(16) contentKey(8) uvarint-prefixed: to, from, fromName, subject
//
// and a content record is
//
//	uvarint(refs) flags(1) uvarint-prefixed body, then the case-folded search text to the end.
const (
	emailVersion   = 1
	flagRead       = 1 << 0
	flagHasSubject = 1 << 1
	flagHasBody    = 1 << 0
)

// Deliver stores msg once for each recipient address in to, in one durable
// transaction, and returns the stored emails in the order of to. Each
// address's local part must pass ValidLocalPart. When Deliver returns nil the
// emails are on disk (fsynced); concurrent calls share one commit.
func (db *DB) Deliver(ctx context.Context, msg *Message, to []string) ([]Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(to) == 0 {
		return nil, errors.New("deliver: no recipients")
	}
	received := db.now().UTC().Truncate(time.Millisecond)
	emails := make([]Email, len(to))
	prefixes := make([][]byte, len(to))
	for i, addr := range to {
		local := localPartOf(addr)
		if !ValidLocalPart(local) || len(local) > MaxLocalPart {
			return nil, fmt.Errorf("deliver to %q: invalid local part", addr)
		}
		prefixes[i] = inboxPrefix(local)
		emails[i] = Email{
			ID:         uuid.New().String(),
			To:         addr,
			From:       msg.From,
			FromName:   msg.FromName,
			Subject:    msg.Subject,
			Body:       msg.Body,
			ReceivedAt: received,
		}
	}
	content := encodeContent(len(to), msg.Body, fold(msg.Text))
	// Batch may run this function more than once (it retries after a failed
	// batch), so it only writes values computed above and sequences that a
	// rollback resets.
	err := db.bolt.Batch(func(tx *bolt.Tx) error {
		contents := tx.Bucket(bucketContents)
		cseq, err := contents.NextSequence()
		if err != nil {
			return err
		}
		ckey := be64(cseq)
		if err := contents.Put(ckey, content); err != nil {
			return err
		}
		if err := tx.Bucket(bucketRaw).Put(ckey, msg.Raw); err != nil {
			return err
		}
		eb, ids := tx.Bucket(bucketEmails), tx.Bucket(bucketIDs)
		for i := range emails {
			seq, err := eb.NextSequence()
			if err != nil {
				return err
			}
			key := emailKey(prefixes[i], received, seq)
			uid := uuid.MustParse(emails[i].ID)
			if err := eb.Put(key, encodeEmail(&emails[i], uid, ckey)); err != nil {
				return err
			}
			if err := ids.Put(uid[:], key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	return emails, nil
}

// List returns the emails of q.LocalPart that match q, newest first (equal
// times in reverse arrival order).
func (db *DB) List(ctx context.Context, q Query) ([]Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := newMatcher(q)
	var out []Email
	err := db.bolt.View(func(tx *bolt.Tx) error {
		prefix := inboxPrefix(q.LocalPart)
		contents := tx.Bucket(bucketContents)
		c := tx.Bucket(bucketEmails).Cursor()
		// The first key past the prefix is prefix with its 0x00 made 0x01.
		end := append(bytes.Clone(prefix[:len(prefix)-1]), 0x01)
		k, v := c.Seek(end)
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if !q.Since.IsZero() && !keyTime(k).After(q.Since) {
				break // keys only get older from here
			}
			e, ckey, err := decodeEmail(k, v)
			if err != nil {
				return err
			}
			body, text, err := decodeContent(contents.Get(ckey))
			if err != nil {
				return fmt.Errorf("email %s: %w", e.ID, err)
			}
			if !m.match(&e, text) {
				continue
			}
			e.Body = bodyString(body)
			out = append(out, e)
			if q.Limit > 0 && len(out) >= q.Limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", q.LocalPart, err)
	}
	return out, nil
}

// Email returns the email with id, or ErrNotFound (also for an id that is
// not a UUID).
func (db *DB) Email(ctx context.Context, id string) (Email, error) {
	var e Email
	err := db.view(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		var (
			ckey []byte
			err  error
		)
		if e, ckey, err = decodeEmail(key, rec); err != nil {
			return err
		}
		body, _, err := decodeContent(tx.Bucket(bucketContents).Get(ckey))
		e.Body = bodyString(body)
		return err
	})
	if err != nil {
		return Email{}, fmt.Errorf("email %s: %w", id, err)
	}
	return e, nil
}

// Raw returns the message with id as it was received, or ErrNotFound.
func (db *DB) Raw(ctx context.Context, id string) ([]byte, error) {
	var raw []byte
	err := db.view(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		_, ckey, err := decodeEmail(key, rec)
		if err != nil {
			return err
		}
		// Values are only valid inside the transaction.
		raw = bytes.Clone(tx.Bucket(bucketRaw).Get(ckey))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("raw %s: %w", id, err)
	}
	return raw, nil
}

// MarkRead sets the read flag of the email with id, or returns ErrNotFound.
func (db *DB) MarkRead(ctx context.Context, id string) error {
	err := db.update(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		if rec[1]&flagRead != 0 {
			return nil
		}
		updated := bytes.Clone(rec)
		updated[1] |= flagRead
		return tx.Bucket(bucketEmails).Put(key, updated)
	})
	if err != nil {
		return fmt.Errorf("mark read %s: %w", id, err)
	}
	return nil
}

// Delete removes the email with id, or returns ErrNotFound. Other
// recipients' copies of the same message are not touched.
func (db *DB) Delete(ctx context.Context, id string) error {
	err := db.update(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		return deleteEmail(tx, key, rec)
	})
	if err != nil {
		return fmt.Errorf("delete email %s: %w", id, err)
	}
	return nil
}

// clearBatch bounds one Clear transaction, so that clearing a large inbox
// never holds the write lock long enough to stall SMTP ingest.
const clearBatch = 256

// Clear deletes every email of the inbox localPart and returns how many it
// deleted. It works in small transactions and stops early when ctx is done.
func (db *DB) Clear(ctx context.Context, localPart string) (int, error) {
	prefix := inboxPrefix(localPart)
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n := 0
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketEmails).Cursor()
			var keys, recs [][]byte
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(keys) < clearBatch; k, v = c.Next() {
				keys, recs = append(keys, k), append(recs, v)
			}
			// Deleting while a cursor walks the bucket can skip keys, so
			// collect first, then delete.
			for i := range keys {
				if err := deleteEmail(tx, bytes.Clone(keys[i]), bytes.Clone(recs[i])); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("clear %s: %w", localPart, err)
		}
		total += n
		if n < clearBatch {
			return total, nil
		}
	}
}

// deleteEmail removes one email and drops its reference to its content.
func deleteEmail(tx *bolt.Tx, key, rec []byte) error {
	if len(rec) < 26 {
		return errCorrupt
	}
	id, ckey := rec[2:18], rec[18:26]
	if err := tx.Bucket(bucketEmails).Delete(key); err != nil {
		return err
	}
	if err := tx.Bucket(bucketIDs).Delete(id); err != nil {
		return err
	}
	contents := tx.Bucket(bucketContents)
	c := contents.Get(ckey)
	refs, n := binary.Uvarint(c)
	if n <= 0 {
		return errCorrupt
	}
	if refs <= 1 {
		if err := contents.Delete(ckey); err != nil {
			return err
		}
		return tx.Bucket(bucketRaw).Delete(ckey)
	}
	updated := binary.AppendUvarint(nil, refs-1)
	return contents.Put(ckey, append(updated, c[n:]...))
}

// view runs fn in a read transaction with the key and record of email id.
func (db *DB) view(ctx context.Context, id string, fn func(tx *bolt.Tx, key, rec []byte) error) error {
	return db.withEmail(ctx, db.bolt.View, id, fn)
}

// update runs fn in a write transaction with the key and record of email id.
func (db *DB) update(ctx context.Context, id string, fn func(tx *bolt.Tx, key, rec []byte) error) error {
	return db.withEmail(ctx, db.bolt.Update, id, fn)
}

func (db *DB) withEmail(ctx context.Context, run func(func(*bolt.Tx) error) error, id string, fn func(tx *bolt.Tx, key, rec []byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Only the canonical 36-character form names an email; uuid.Parse
	// would also take urn:uuid:, braces and bare hex.
	if len(id) != 36 {
		return ErrNotFound
	}
	uid, err := uuid.Parse(id)
	if err != nil {
		return ErrNotFound
	}
	return run(func(tx *bolt.Tx) error {
		key := tx.Bucket(bucketIDs).Get(uid[:])
		if key == nil {
			return ErrNotFound
		}
		rec := tx.Bucket(bucketEmails).Get(key)
		if rec == nil {
			return errCorrupt
		}
		return fn(tx, key, rec)
	})
}

var errCorrupt = errors.New("storage: corrupt record")

// localPartOf returns the part of addr before its last '@' (all of addr when
// it has none).
func localPartOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[:i]
	}
	return addr
}

// inboxPrefix returns lower(localPart) 0x00. Local parts are ASCII
// (ValidLocalPart), so ASCII lower-casing is the whole of case-insensitivity.
func inboxPrefix(localPart string) []byte {
	p := make([]byte, 0, len(localPart)+1)
	for i := 0; i < len(localPart); i++ {
		c := localPart[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		p = append(p, c)
	}
	return append(p, 0)
}

func emailKey(prefix []byte, t time.Time, seq uint64) []byte {
	k := make([]byte, 0, len(prefix)+16)
	k = append(k, prefix...)
	k = binary.BigEndian.AppendUint64(k, uint64(t.UnixMilli()))
	return binary.BigEndian.AppendUint64(k, seq)
}

func keyTime(key []byte) time.Time {
	ms := binary.BigEndian.Uint64(key[len(key)-16:])
	return time.UnixMilli(int64(ms)).UTC()
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func encodeEmail(e *Email, id uuid.UUID, ckey []byte) []byte {
	var flags byte
	if e.Read {
		flags |= flagRead
	}
	subject := ""
	if e.Subject != nil {
		flags |= flagHasSubject
		subject = *e.Subject
	}
	b := make([]byte, 0, 26+len(e.To)+len(e.From)+len(e.FromName)+len(subject)+8)
	b = append(b, emailVersion, flags)
	b = append(b, id[:]...)
	b = append(b, ckey...)
	for _, s := range []string{e.To, e.From, e.FromName, subject} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// decodeEmail decodes an email record (without its body) and returns the key
// of its content record.
func decodeEmail(key, rec []byte) (Email, []byte, error) {
	if len(rec) < 26 || rec[0] != emailVersion || len(key) < 17 {
		return Email{}, nil, errCorrupt
	}
	flags := rec[1]
	e := Email{
		ID:         uuid.UUID(rec[2:18]).String(),
		ReceivedAt: keyTime(key),
		Read:       flags&flagRead != 0,
	}
	ckey := bytes.Clone(rec[18:26])
	rest := rec[26:]
	var fields [4]string
	for i := range fields {
		n, w := binary.Uvarint(rest)
		if w <= 0 || uint64(len(rest)-w) < n {
			return Email{}, nil, errCorrupt
		}
		fields[i] = string(rest[w : w+int(n)])
		rest = rest[w+int(n):]
	}
	e.To, e.From, e.FromName = fields[0], fields[1], fields[2]
	if flags&flagHasSubject != 0 {
		e.Subject = &fields[3]
	}
	return e, ckey, nil
}

func encodeContent(refs int, body *string, foldedText string) []byte {
	var flags byte
	b := ""
	if body != nil {
		flags |= flagHasBody
		b = *body
	}
	out := binary.AppendUvarint(make([]byte, 0, 12+len(b)+len(foldedText)), uint64(refs))
	out = append(out, flags)
	out = binary.AppendUvarint(out, uint64(len(b)))
	out = append(out, b...)
	return append(out, foldedText...)
}

// decodeContent returns the body of a content record (nil when the message
// has none) and its folded search text, both as slices into rec, valid only
// inside the transaction: List copies a body only once the email matches.
func decodeContent(rec []byte) (body, text []byte, err error) {
	_, w := binary.Uvarint(rec)
	if w <= 0 || len(rec) < w+1 {
		return nil, nil, errCorrupt
	}
	flags := rec[w]
	rest := rec[w+1:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return nil, nil, errCorrupt
	}
	body = rest[w : w+int(n) : w+int(n)]
	if flags&flagHasBody == 0 {
		body = nil
	} else if body == nil {
		body = []byte{}
	}
	return body, rest[w+int(n):], nil
}

// bodyString copies a body out of a transaction; nil stays nil.
func bodyString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// fold returns s under Unicode full case folding, the form in which search
// text is stored and compared (so "STRASSE" finds "Straße").
func fold(s string) string {
	return cases.Fold().String(s)
}

// matcher holds a Query's filters, folded once per List.
type matcher struct {
	subject, body string
	terms         []string
}

func newMatcher(q Query) matcher {
	m := matcher{subject: fold(q.Subject), body: fold(q.Body)}
	for _, t := range q.Terms {
		if t != "" {
			m.terms = append(m.terms, fold(t))
		}
	}
	return m
}

func (m *matcher) match(e *Email, text []byte) bool {
	if m.subject != "" && (e.Subject == nil || !strings.Contains(fold(*e.Subject), m.subject)) {
		return false
	}
	if m.body != "" && !bytes.Contains(text, []byte(m.body)) {
		return false
	}
	if len(m.terms) == 0 {
		return true
	}
	subject := ""
	if e.Subject != nil {
		subject = fold(*e.Subject)
	}
	name, from := fold(e.FromName), fold(e.From)
	for _, t := range m.terms {
		if !strings.Contains(subject, t) && !strings.Contains(name, t) &&
			!strings.Contains(from, t) && !bytes.Contains(text, []byte(t)) {
			return false
		}
	}
	return true
}
