package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// Email returns the email with id, or ErrNotFound (also for an id that is
// not a UUID).
func (db *DB) Email(ctx context.Context, id string) (storage.Email, error) {
	var e storage.Email
	err := db.view(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		v, err := viewEmail(rec)
		if err != nil {
			return err
		}
		ct, err := decodeContent(tx.Bucket(bucketContents).Get(v.ckey))
		if err != nil {
			return err
		}
		e = v.email(key)
		e.Body = bodyString(ct.body)
		return nil
	})
	if err != nil {
		return storage.Email{}, fmt.Errorf("email %s: %w", id, err)
	}
	return e, nil
}

// Raw returns the message with id as it was received, or ErrNotFound.
func (db *DB) Raw(ctx context.Context, id string) ([]byte, error) {
	var raw []byte
	err := db.viewCold(ctx, id, func(c cold) error {
		raw = bytes.Clone(c.raw) // an old record's points into the transaction
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("raw %s: %w", id, err)
	}
	return raw, nil
}

// Content returns the plain text and links of the email with id, or
// ErrNotFound.
func (db *DB) Content(ctx context.Context, id string) (storage.Content, error) {
	var out storage.Content
	err := db.viewCold(ctx, id, func(c cold) error {
		links, err := record.DecodeStrings(c.links)
		out.Plain, out.Links = string(c.plain), links
		return err
	})
	if err != nil {
		return storage.Content{}, fmt.Errorf("content %s: %w", id, err)
	}
	return out, nil
}

// viewCold calls fn, in a read transaction, with the cold section of the
// message of email id.
func (db *DB) viewCold(ctx context.Context, id string, fn func(cold) error) error {
	return db.view(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		ckey := recordContentKey(rec)
		ct, err := decodeContent(tx.Bucket(bucketContents).Get(ckey))
		if err != nil {
			return err
		}
		c, err := decodeCold(&ct, tx.Bucket(bucketRaw).Get(ckey))
		if err != nil {
			return err
		}
		return fn(c)
	})
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
			n, err = trimInbox(tx, inbox, inboxCount(tx, inbox), 0, smallTx)
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

// trimInbox deletes the oldest emails of inbox, which holds n, until at
// most keep remain, or until it has deleted most (when most >= 0), and
// returns how many it deleted.
func trimInbox(tx *bolt.Tx, inbox []byte, n, keep, most int) (int, error) {
	over := n - keep
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
		return storage.ErrCorrupt
	}
	if err := tx.Bucket(bucketEmails).Delete(key); err != nil {
		return err
	}
	if err := tx.Bucket(bucketIDs).Delete(recordID(rec)); err != nil {
		return err
	}
	if err := addCount(tx, key, -1); err != nil {
		return err
	}
	ckey := recordContentKey(rec)
	contents := tx.Bucket(bucketContents)
	c := contents.Get(ckey)
	refs, n := contentRefs(c)
	if n <= 0 {
		return storage.ErrCorrupt
	}
	if refs <= 1 {
		if err := contents.Delete(ckey); err != nil {
			return err
		}
		if err := tx.Bucket(bucketParts).Delete(ckey); err != nil {
			return err
		}
		if err := tx.Bucket(bucketAuth).Delete(ckey); err != nil {
			return err
		}
		return tx.Bucket(bucketRaw).Delete(ckey)
	}
	updated := binary.AppendUvarint(nil, refs-1)
	return contents.Put(ckey, append(updated, c[n:]...))
}

// inboxCount returns the number of emails in inbox.
func inboxCount(tx *bolt.Tx, inbox []byte) int {
	n, _, _ := decodeInbox(tx.Bucket(bucketInboxes).Get(inbox))
	return n
}

// addCount counts the email at key, an emails key, into its inbox (delta
// 1, once it is put) or out of it (delta -1, once it is deleted), and
// keeps the time of the inbox's newest email beside the count (codec.go),
// forgetting an inbox at zero. Only when the newest email goes does it
// read the emails bucket, for the one before it.
func addCount(tx *bolt.Tx, key []byte, delta int) error {
	inbox := keyInbox(key)
	b := tx.Bucket(bucketInboxes)
	n, newest, _ := decodeInbox(b.Get(inbox))
	if n += delta; n <= 0 {
		return b.Delete(inbox)
	}
	at := keyMilli(key)
	switch {
	case delta > 0 && at > newest:
		newest = at
	case delta < 0 && at >= newest:
		prefix := append(inbox[:len(inbox):len(inbox)], 0)
		if k := newestKey(tx.Bucket(bucketEmails).Cursor(), prefix); len(k) == len(prefix)+16 && bytes.HasPrefix(k, prefix) {
			newest = keyMilli(k)
		}
	}
	return b.Put(bytes.Clone(inbox), encodeInbox(n, newest))
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
	uid, err := storage.ParseID(id)
	if err != nil {
		return err
	}
	return run(func(tx *bolt.Tx) error {
		key := tx.Bucket(bucketIDs).Get(uid[:])
		if key == nil {
			return storage.ErrNotFound
		}
		rec := tx.Bucket(bucketEmails).Get(key)
		if rec == nil {
			return storage.ErrCorrupt
		}
		return fn(tx, key, rec)
	})
}
