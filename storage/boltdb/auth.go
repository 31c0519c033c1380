package boltdb

import (
	"context"
	"fmt"
	"time"

	"burner/storage"
	"burner/storage/internal/commit"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// The auth layout:
//
//	auth: be64(content seq) -> authentication record (spec §12)
//
// It is keyed like contents, raw and parts, so the emails of one message
// share one record, and deleteEmail drops it with the last reference to
// the content. Deliver writes it (status pending, or off) in the
// delivery's commit; PutAuth replaces it with the verdicts. The record is
// encoded as every engine encodes it (record.EncodeAuth).
var bucketAuth = []byte("auth")

// verdictDelay is how long a verdict waits for a commit to ride in: the
// next delivery's, or else one of its own with the verdicts that came
// meanwhile. A verdict is off the SMTP path and may wait; a commit of its
// own per verdict would double the file's commits under load.
const verdictDelay = 10 * time.Millisecond

// Auth returns the authentication record of the message of email id: what
// Deliver or PutAuth wrote, or status off for a message stored without
// one. It returns ErrNotFound when there is no email with id.
func (db *DB) Auth(ctx context.Context, id string) (storage.AuthResult, error) {
	r := storage.AuthResult{Status: storage.AuthOff}
	err := db.view(ctx, id, func(tx *bolt.Tx, _, rec []byte) error {
		v := tx.Bucket(bucketAuth).Get(recordContentKey(rec))
		if v == nil {
			return nil
		}
		var err error
		r, err = record.DecodeAuth(v)
		return err
	})
	if err != nil {
		return storage.AuthResult{}, fmt.Errorf("auth %s: %w", id, err)
	}
	return r, nil
}

// PutAuth stores r as the authentication record of the message of each
// email of ids that is still stored, and wakes their AuthChanged waiters.
// It returns ErrNotFound when none is, and an error wrapping ErrFull when
// the file has no room, as PutAttachments. It returns once the record is
// committed: in the next delivery's commit, or after verdictDelay in one
// that the verdicts of that while share.
func (db *DB) PutAuth(ctx context.Context, ids []string, r storage.AuthResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v, err := commit.NewVerdict(ids, record.EncodeAuth(r))
	if err == nil {
		err = db.checkRoom(len(v.Rec))
	}
	if err == nil {
		db.verdicts.Add(v)
		err = v.Wait()
	}
	if err != nil {
		return fmt.Errorf("put auth %v: %w", ids, err)
	}
	v.Notify(&db.authChanges)
	return nil
}

// flushVerdicts commits the verdicts that no delivery took in verdictDelay
// (db.verdicts' Due): a commit with no delivery takes them.
func (db *DB) flushVerdicts() { db.commitBatch(nil) }

// putVerdict writes the record of v in tx, under the content key of each
// of its emails that is still stored, and sets v.Found. Like put, it may
// run again in a new transaction.
func putVerdict(tx *bolt.Tx, v *commit.Verdict) error {
	ids, emails, auth := tx.Bucket(bucketIDs), tx.Bucket(bucketEmails), tx.Bucket(bucketAuth)
	v.Found = false
	for _, id := range v.IDs {
		key := ids.Get(id[:])
		if key == nil {
			continue // deleted since: its verdict is dropped
		}
		rec := emails.Get(key)
		if len(rec) < emailFixedLen {
			return fmt.Errorf("email %s: %w", id, storage.ErrCorrupt)
		}
		if err := auth.Put(recordContentKey(rec), v.Rec); err != nil {
			return err
		}
		v.Found = true
	}
	return nil
}

// AuthChanged returns a channel that is closed once PutAuth has stored a
// record for email id after the call (storage.Engine). One process holds
// the file, so every PutAuth is this one's.
func (db *DB) AuthChanged(id string) <-chan struct{} { return db.authChanges.ChangedID(id) }

// checkAuth checks that every authentication record decodes and belongs
// to a stored message.
func checkAuth(tx *bolt.Tx, r *storage.CheckReport) {
	contents := tx.Bucket(bucketContents)
	tx.Bucket(bucketAuth).ForEach(func(ckey, v []byte) error {
		if contents.Get(ckey) == nil {
			r.Problemf("authentication record %x belongs to no message", ckey)
			return nil
		}
		if _, err := record.DecodeAuth(v); err != nil {
			r.Problemf("authentication record %x: %v", ckey, err)
		}
		return nil
	})
}
