package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// Deliver stores msg once for each recipient address in to, in one durable
// transaction, and returns the stored emails in the order of to. Each
// address's local part must pass ValidLocalPart. When Deliver returns nil the
// emails are on disk (fsynced); concurrent calls share one commit. An inbox
// past Options.MaxPerInbox loses its oldest emails in the same transaction.
// Deliver returns an error wrapping ErrFull when the file is at its cap.
func (db *DB) Deliver(ctx context.Context, msg *Message, to []string) ([]Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(to) == 0 {
		return nil, errors.New("deliver: no recipients")
	}
	if err := db.checkRoom(len(msg.Raw)); err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	received := db.now().UTC().Truncate(time.Millisecond)
	emails := make([]Email, len(to))
	ids := make([]uuid.UUID, len(to))
	inboxes := make([][]byte, len(to))
	for i, addr := range to {
		local := localPartOf(addr)
		if !ValidLocalPart(local) || len(local) > MaxLocalPart {
			return nil, fmt.Errorf("deliver to %q: invalid local part", addr)
		}
		inboxes[i] = inboxName(local)
		ids[i] = uuid.New()
		emails[i] = Email{
			ID:         ids[i].String(),
			To:         addr,
			From:       msg.From,
			FromName:   msg.FromName,
			Subject:    msg.Subject,
			Body:       msg.Body,
			ReceivedAt: received,
		}
	}
	content := encodeContent(len(to), msg)
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
		eb := tx.Bucket(bucketEmails)
		for i := range emails {
			seq, err := eb.NextSequence()
			if err != nil {
				return err
			}
			key := emailKey(inboxes[i], received, seq)
			if err := eb.Put(key, encodeEmail(&emails[i], ids[i], ckey)); err != nil {
				return err
			}
			if err := tx.Bucket(bucketIDs).Put(ids[i][:], key); err != nil {
				return err
			}
			if err := addCount(tx, inboxes[i], 1); err != nil {
				return err
			}
		}
		if db.maxPerInbox > 0 {
			for _, inbox := range inboxes {
				if _, err := trimInbox(tx, inbox, db.maxPerInbox, -1); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	for _, inbox := range inboxes {
		db.notify(string(inbox))
	}
	return emails, nil
}

// checkRoom returns ErrFull when storing n more bytes would take the data
// file past Options.MaxBytes. Pages freed by deletions are reused, so what
// counts is the file's size less its free pages.
func (db *DB) checkRoom(n int) error {
	if db.maxBytes <= 0 {
		return nil
	}
	var size int64
	if err := db.bolt.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return err
	}
	if used := size - int64(db.bolt.Stats().FreeAlloc); used+int64(n) > db.maxBytes {
		return ErrFull
	}
	return nil
}

// List returns the emails of q.LocalPart that match q, newest first (equal
// times in reverse arrival order). With q.After it returns ErrNotFound when
// that email does not exist (or is in another inbox).
func (db *DB) List(ctx context.Context, q Query) ([]Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := newMatcher(q)
	var out []Email
	err := db.bolt.View(func(tx *bolt.Tx) error {
		prefix := inboxPrefix(q.LocalPart)
		after, err := inboxKey(tx, prefix, q.After) // keys at or before it are not listed
		if err != nil {
			return err
		}
		start, err := inboxKey(tx, prefix, q.Before) // the walk starts below it
		if err != nil {
			return err
		}
		if start == nil {
			start = prefixEnd(prefix)
		}
		contents := tx.Bucket(bucketContents)
		c := tx.Bucket(bucketEmails).Cursor()
		k, v := c.Seek(start)
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if after != nil && bytes.Compare(k, after) <= 0 {
				break
			}
			if !q.Since.IsZero() && !keyTime(k).After(q.Since) {
				break // keys only get older from here
			}
			e, ckey, err := decodeEmail(k, v)
			if err != nil {
				return err
			}
			ct, err := decodeContent(contents.Get(ckey))
			if err != nil {
				return fmt.Errorf("email %s: %w", e.ID, err)
			}
			if !m.match(&e, &ct) {
				continue
			}
			e.Body = bodyString(ct.body)
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

// inboxKey returns the emails key of the email with id, which must be in
// the inbox of prefix; nil for an empty id; ErrNotFound when there is none.
func inboxKey(tx *bolt.Tx, prefix []byte, id string) ([]byte, error) {
	if id == "" {
		return nil, nil
	}
	uid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	key := tx.Bucket(bucketIDs).Get(uid[:])
	if key == nil || !bytes.HasPrefix(key, prefix) {
		return nil, ErrNotFound
	}
	return key, nil
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
		ct, err := decodeContent(tx.Bucket(bucketContents).Get(ckey))
		e.Body = bodyString(ct.body)
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
		// Values are only valid inside the transaction.
		raw = bytes.Clone(tx.Bucket(bucketRaw).Get(recordContentKey(rec)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("raw %s: %w", id, err)
	}
	return raw, nil
}

// Content returns the plain text and links of the email with id, or
// ErrNotFound.
func (db *DB) Content(ctx context.Context, id string) (Content, error) {
	var out Content
	err := db.view(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		ct, err := decodeContent(tx.Bucket(bucketContents).Get(recordContentKey(rec)))
		if err != nil {
			return err
		}
		out.Plain, out.Links = string(ct.plain), decodeLinks(ct.links)
		return nil
	})
	if err != nil {
		return Content{}, fmt.Errorf("content %s: %w", id, err)
	}
	return out, nil
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

// smallTx bounds the deletions of one transaction of a long job (Clear, the
// sweeper), so that it never holds the write lock long enough to stall SMTP
// ingest.
const smallTx = 256

// Clear deletes every email of the inbox localPart and returns how many it
// deleted. It works in small transactions and stops early when ctx is done.
func (db *DB) Clear(ctx context.Context, localPart string) (int, error) {
	inbox := inboxName(localPart)
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n := 0
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			var err error
			n, err = trimInbox(tx, inbox, 0, smallTx)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("clear %s: %w", localPart, err)
		}
		total += n
		if n < smallTx {
			return total, nil
		}
	}
}

// trimInbox deletes the oldest emails of inbox until at most keep remain,
// or until it has deleted most (when most >= 0), and returns how many it
// deleted.
func trimInbox(tx *bolt.Tx, inbox []byte, keep, most int) (int, error) {
	over := inboxCount(tx, inbox) - keep
	if most >= 0 && over > most {
		over = most
	}
	if over <= 0 {
		return 0, nil
	}
	prefix := append(bytes.Clone(inbox), 0)
	c := tx.Bucket(bucketEmails).Cursor()
	// Deleting while a cursor walks the bucket can skip keys, so collect
	// first, then delete.
	var keys, recs [][]byte
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(keys) < over; k, v = c.Next() {
		keys, recs = append(keys, bytes.Clone(k)), append(recs, bytes.Clone(v))
	}
	for i := range keys {
		if err := deleteEmail(tx, keys[i], recs[i]); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

// deleteEmail removes one email, counts it out of its inbox and drops its
// reference to its content.
func deleteEmail(tx *bolt.Tx, key, rec []byte) error {
	if len(rec) < emailFixedLen {
		return errCorrupt
	}
	if err := tx.Bucket(bucketEmails).Delete(key); err != nil {
		return err
	}
	if err := tx.Bucket(bucketIDs).Delete(recordID(rec)); err != nil {
		return err
	}
	if err := addCount(tx, keyInbox(key), -1); err != nil {
		return err
	}
	ckey := recordContentKey(rec)
	contents := tx.Bucket(bucketContents)
	c := contents.Get(ckey)
	refs, n := contentRefs(c)
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

// inboxCount returns the number of emails in inbox.
func inboxCount(tx *bolt.Tx, inbox []byte) int {
	v := tx.Bucket(bucketInboxes).Get(inbox)
	if len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(v))
}

// addCount adds delta to the count of inbox, forgetting an inbox at zero.
func addCount(tx *bolt.Tx, inbox []byte, delta int) error {
	n := inboxCount(tx, inbox) + delta
	b := tx.Bucket(bucketInboxes)
	if n <= 0 {
		return b.Delete(inbox)
	}
	return b.Put(bytes.Clone(inbox), be64(uint64(n)))
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
	uid, err := parseID(id)
	if err != nil {
		return err
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

// parseID parses an email id, or returns ErrNotFound. Only the canonical
// 36-character form names an email; uuid.Parse would also take urn:uuid:,
// braces and bare hex.
func parseID(id string) (uuid.UUID, error) {
	if len(id) != 36 {
		return uuid.UUID{}, ErrNotFound
	}
	uid, err := uuid.Parse(id)
	if err != nil {
		return uuid.UUID{}, ErrNotFound
	}
	return uid, nil
}

var errCorrupt = errors.New("storage: corrupt record")
