package boltdb

import (
	"context"
	"fmt"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// The parts layout:
//
//	parts: be64(content seq) -> attachment index
//
// It is keyed like contents and raw, so the emails of one message share one
// index, and deleteEmail drops it with the last reference to the content.
// An index is computed by its reader (the server walks the MIME tree; this
// package imports no MIME parser) the first time a message's files are
// asked for, so that delivery pays nothing for it. The index is encoded as
// every engine encodes it (record.EncodeAttachments).

// Attachments returns the stored attachment index of the message of email
// id, and false when none is stored yet. It returns ErrNotFound when there
// is no email with id.
func (db *DB) Attachments(ctx context.Context, id string) (storage.Attachments, bool, error) {
	var (
		a  storage.Attachments
		ok bool
	)
	err := db.view(ctx, id, func(tx *bolt.Tx, _, rec []byte) error {
		v := tx.Bucket(bucketParts).Get(recordContentKey(rec))
		if v == nil {
			return nil
		}
		var err error
		a, ok, err = record.DecodeAttachments(v)
		return err
	})
	if err != nil {
		return storage.Attachments{}, false, fmt.Errorf("attachments %s: %w", id, err)
	}
	return a, ok, nil
}

// PutAttachments stores a as the attachment index of the message of email
// id, for every email that shares the message. It returns ErrNotFound when
// there is no email with id (it may have been deleted since its source was
// read), and an error wrapping ErrFull when the file has no room for it, as
// Deliver would: an index is a convenience, and mail comes first.
func (db *DB) PutAttachments(ctx context.Context, id string, a storage.Attachments) error {
	v := record.EncodeAttachments(a)
	if err := db.checkRoom(len(v)); err != nil {
		return fmt.Errorf("put attachments %s: %w", id, err)
	}
	err := db.update(ctx, id, func(tx *bolt.Tx, _, rec []byte) error {
		return tx.Bucket(bucketParts).Put(recordContentKey(rec), v)
	})
	if err != nil {
		return fmt.Errorf("put attachments %s: %w", id, err)
	}
	return nil
}
