package storage

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Stats describes what the file holds.
type Stats struct {
	Emails    int   // emails stored
	Inboxes   int   // inboxes with at least one email
	FileBytes int64 // the data file's size
}

// Stats counts the emails and inboxes of the file. It reads the per-inbox
// counts, not the emails, so it costs one step per inbox.
func (db *DB) Stats(ctx context.Context) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	var st Stats
	err := db.bolt.View(func(tx *bolt.Tx) error {
		st.FileBytes = tx.Size()
		return tx.Bucket(bucketInboxes).ForEach(func(k, _ []byte) error {
			st.Inboxes++
			st.Emails += inboxCount(tx, k)
			return nil
		})
	})
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// CheckWritable commits an empty write transaction: it fails when the file
// is closed or the disk refuses writes. It costs an fsync, so callers
// should not run it per request.
func (db *DB) CheckWritable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.bolt.Update(func(tx *bolt.Tx) error {
		// Rewriting the schema version dirties a page, so the commit
		// really writes.
		meta := tx.Bucket(bucketMeta)
		return meta.Put(keySchema, []byte{schemaVersion})
	})
}
