package storage

import (
	"bytes"
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Stats describes what the file holds.
type Stats struct {
	Emails    int       // emails stored
	Inboxes   int       // inboxes with at least one email
	Keys      int       // API keys
	FileBytes int64     // the data file's size
	Oldest    time.Time // when the oldest email was received; zero without emails
}

// Stats counts the emails, inboxes and keys of the file and finds its
// oldest email. It reads the per-inbox counts and the first key of each
// inbox, not the emails, so it costs one step per inbox.
func (db *DB) Stats(ctx context.Context) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	var st Stats
	err := db.bolt.View(func(tx *bolt.Tx) error {
		st.FileBytes = tx.Size()
		st.Keys = tx.Bucket(bucketKeys).Stats().KeyN
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
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// Inbox describes one inbox: an inbox exists while it holds an email.
type Inbox struct {
	Name   string    // the local part, lower-cased
	Emails int       // how many emails it holds
	Newest time.Time // when its newest email was received
}

// Inboxes returns every inbox, by name. It reads the per-inbox counts and
// the last key of each inbox, so it costs one step per inbox.
func (db *DB) Inboxes(ctx context.Context) ([]Inbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Inbox
	err := db.bolt.View(func(tx *bolt.Tx) error {
		emails := tx.Bucket(bucketEmails).Cursor()
		return tx.Bucket(bucketInboxes).ForEach(func(k, _ []byte) error {
			in := Inbox{Name: string(k), Emails: inboxCount(tx, k)}
			// The last key before the end of the prefix is the newest.
			prefix := append(k[:len(k):len(k)], 0)
			last, _ := emails.Seek(prefixEnd(prefix))
			if last == nil {
				last, _ = emails.Last()
			} else {
				last, _ = emails.Prev()
			}
			in.Newest, _ = timeIn(last, prefix)
			out = append(out, in)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("inboxes: %w", err)
	}
	return out, nil
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

// CheckWritable commits an empty write transaction, then makes Deliver's
// check of room (checkRoom) for a small message. It fails when the file is
// closed or the disk refuses writes, and with an error wrapping ErrFull
// while new mail would be refused for want of space (Options.MaxBytes, or
// a full disk). The commit costs an fsync, so callers should not run it
// per request.
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
	return nil
}
