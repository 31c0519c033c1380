package boltdb

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"burner/storage"

	bolt "go.etcd.io/bbolt"
)

// Stats counts the emails, inboxes and keys of the file and finds its
// oldest email. It reads the per-inbox counts and the first key of each
// inbox, not the emails, so it costs one step per inbox.
func (db *DB) Stats(ctx context.Context) (storage.Stats, error) {
	if err := ctx.Err(); err != nil {
		return storage.Stats{}, err
	}
	var st storage.Stats
	err := db.bolt.View(func(tx *bolt.Tx) error {
		st.FileBytes = tx.Size()
		st.Keys = tx.Bucket(bucketKeys).Stats().KeyN
		if b := tx.Bucket(bucketSMTPLog); b != nil {
			st.SMTPSessions = int(b.Sequence()) // it counts them (smtplog.go)
		}
		emails := tx.Bucket(bucketEmails).Cursor()
		return tx.Bucket(bucketInboxes).ForEach(func(k, _ []byte) error {
			st.Inboxes++
			st.Emails += inboxCount(tx, k)
			// An inbox's keys sort by time: its first is its oldest.
			prefix := append(k[:len(k):len(k)], 0)
			first, _ := emails.Seek(prefix)
			if t, ok := timeIn(first, prefix); ok && (st.Oldest.IsZero() || t.Before(st.Oldest)) {
				st.Oldest = t
			}
			return nil
		})
	})
	if err != nil {
		return storage.Stats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// Inboxes returns every inbox, by name. It reads the per-inbox counts and
// the last key of each inbox, so it costs one step per inbox.
func (db *DB) Inboxes(ctx context.Context) ([]storage.Inbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []storage.Inbox
	err := db.bolt.View(func(tx *bolt.Tx) error {
		emails := tx.Bucket(bucketEmails).Cursor()
		return tx.Bucket(bucketInboxes).ForEach(func(k, _ []byte) error {
			in := storage.Inbox{Name: string(k), Emails: inboxCount(tx, k)}
			// The last key before the end of the prefix is the newest.
			prefix := append(k[:len(k):len(k)], 0)
			in.Newest, _ = timeIn(newestKey(emails, prefix), prefix)
			out = append(out, in)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("inboxes: %w", err)
	}
	return out, nil
}

// newestKey returns the last key before the end of prefix: the key of the
// newest email of the inbox of prefix when it has one.
func newestKey(c *bolt.Cursor, prefix []byte) []byte {
	k, _ := c.Seek(prefixEnd(prefix))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	return k
}

// timeIn returns the time of key, an emails key, when it belongs to the
// inbox of prefix.
func timeIn(key, prefix []byte) (time.Time, bool) {
	if len(key) != len(prefix)+16 || !bytes.HasPrefix(key, prefix) {
		return time.Time{}, false
	}
	return keyTime(key), true
}

// healthRoom is the message CheckWritable wants room for: a small one,
// headers and all.
const healthRoom = 4 << 10

// CheckWritable commits an empty write transaction, then makes Deliver's check
// of room (checkRoom) for a small message. It fails when the file is closed or
// the disk refuses writes, with an error wrapping ErrFull while new mail would
// be refused for want of space (Options.Retention.MaxBytes, or a full disk),
// and with one wrapping ErrWriteFailed while the last delivery's commit failed
// and none has succeeded since. The commit costs an fsync, so callers should
// not run it per request.
func (db *DB) CheckWritable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		// Rewriting the schema version dirties a page, so the commit
		// really writes.
		meta := tx.Bucket(bucketMeta)
		return meta.Put(keySchema, []byte{byte(schemaVersion)})
	})
	if err != nil {
		return err
	}
	if err := db.checkRoom(healthRoom); err != nil {
		return fmt.Errorf("no room for new mail: %w", err)
	}
	// The empty commit above fits in the file's free pages, and so may
	// the small message: what a real delivery met tells more.
	return db.writes.Err()
}
