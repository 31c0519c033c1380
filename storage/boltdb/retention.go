package boltdb

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// sweepInboxes bounds the inboxes one Sweep transaction visits.
const sweepInboxes = 1024

// Sweep applies the retention options: it deletes emails older than
// Options.Retention.MaxAge and, in each inbox, the oldest beyond
// Options.Retention.MaxPerInbox (delivery keeps that cap too; Sweep catches a
// cap lowered since). It works in small transactions, so ingest and the API
// never wait long for it, and stops early when ctx is done. It returns how many
// emails it deleted. It keeps the SMTP session log within its age and
// cap too, and forgets the RCPTs counted for fault rules more than a
// minute ago.
func (db *DB) Sweep(ctx context.Context) (int, error) {
	db.rcpts.forget(db.now())
	if err := db.sweepSMTPLog(ctx); err != nil {
		return 0, fmt.Errorf("sweep: the smtp session log: %w", err)
	}
	if db.retention.MaxAge <= 0 && db.retention.MaxPerInbox <= 0 {
		return 0, nil
	}
	total := 0
	var from []byte // the inbox to start the next transaction at
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, next, err := db.sweepFrom(from)
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep: %w", err)
		}
		if next == nil {
			return total, nil
		}
		from = next
	}
}

// sweepFrom sweeps, in one transaction, the inboxes from the first at or
// after from, until it has deleted smallTx emails or visited sweepInboxes
// inboxes. It returns where to go on, or nil when it reached the end.
func (db *DB) sweepFrom(from []byte) (deleted int, next []byte, err error) {
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		// Deleting emails changes the inboxes bucket, so collect names
		// before walking them.
		var names [][]byte
		c := tx.Bucket(bucketInboxes).Cursor()
		k, _ := c.First()
		if from != nil {
			k, _ = c.Seek(from)
		}
		for ; k != nil && len(names) <= sweepInboxes; k, _ = c.Next() {
			names = append(names, bytes.Clone(k))
		}
		next = nil
		if len(names) > sweepInboxes {
			next, names = names[sweepInboxes], names[:sweepInboxes]
		}
		deleted = 0
		for _, inbox := range names {
			n, err := db.sweepInbox(tx, inbox, smallTx-deleted)
			deleted += n
			if err != nil {
				return err
			}
			if deleted >= smallTx {
				next = inbox // it may hold more; visit it again
				return nil
			}
		}
		return nil
	})
	return deleted, next, err
}

// sweepInbox deletes at most most emails of inbox that retention wants
// gone: the oldest beyond the cap, then those older than the maximum age.
func (db *DB) sweepInbox(tx *bolt.Tx, inbox []byte, most int) (int, error) {
	n := 0
	if db.retention.MaxPerInbox > 0 {
		var err error
		if n, err = trimInbox(tx, inbox, inboxCount(tx, inbox), db.retention.MaxPerInbox, most); err != nil || n == most {
			return n, err
		}
	}
	if db.retention.MaxAge <= 0 {
		return n, nil
	}
	cutoff := db.now().Add(-db.retention.MaxAge)
	prefix := append(bytes.Clone(inbox), 0)
	c := tx.Bucket(bucketEmails).Cursor()
	var keys, recs [][]byte
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n+len(keys) < most; k, v = c.Next() {
		if !keyTime(k).Before(cutoff) {
			break // an inbox's keys are in time order
		}
		keys, recs = append(keys, bytes.Clone(k)), append(recs, bytes.Clone(v))
	}
	for i := range keys {
		if err := deleteEmail(tx, keys[i], recs[i]); err != nil {
			return n + i, err
		}
	}
	return n + len(keys), nil
}
