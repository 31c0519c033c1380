package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// The SMTP session log (spec §13.1; storage.Engine). The layout:
//
//	smtplog:   be64(startedAt unix ms) uuid(16)                      -> record (record.EncodeSMTPSession)
//	smtplogto: lower(inbox) 0x00 be64(startedAt unix ms) uuid(16)    -> nothing
//
// smtplog's keys sort by start, then id: the order of the log, newest
// last, so that a listing walks backwards from the end and the sweeper
// deletes from the start. smtplogto indexes each record under every inbox
// its RCPTs named, for a listing by inbox. The bucket's sequence counts
// its records, so that the cap (Retention.MaxSessions) costs no scan: a
// bucket's sequence is kept in its header, which any write to the bucket
// rewrites anyway.
//
// A delivery writes its session's record in its own transaction (put); the
// rest come in batches (WriteSMTPSessions). Either way a record still open
// never replaces an ended one.

var (
	bucketSMTPLog   = []byte("smtplog")
	bucketSMTPLogTo = []byte("smtplogto")
)

// smtpLogEntry is a record ready to be written: its key, its inboxes and
// its encoding, made before the transaction.
type smtpLogEntry struct {
	key     []byte // be64(startedAt) uuid
	inboxes []string
	ended   bool
	value   []byte
}

// newSMTPLogEntry encodes s.
func newSMTPLogEntry(s *storage.SMTPSession) (smtpLogEntry, error) {
	v, err := record.EncodeSMTPSession(s)
	if err != nil {
		return smtpLogEntry{}, err
	}
	id, _ := storage.ParseID(s.ID) // EncodeSMTPSession checked it
	key := binary.BigEndian.AppendUint64(make([]byte, 0, 24), uint64(s.StartedAt.UnixMilli()))
	return smtpLogEntry{key: append(key, id[:]...), inboxes: s.Inboxes(), ended: s.EndedAt != nil, value: v}, nil
}

// smtpLogToKey is the smtplogto key of the record at key for inbox.
func smtpLogToKey(inbox string, key []byte) []byte {
	return append(append(append(make([]byte, 0, len(inbox)+1+len(key)), inbox...), 0), key...)
}

// putSMTPSession writes e in tx, unless the record of its session there
// is ended and e is not; it counts a new record in the bucket's sequence.
func putSMTPSession(tx *bolt.Tx, e smtpLogEntry) error {
	b, to := tx.Bucket(bucketSMTPLog), tx.Bucket(bucketSMTPLogTo)
	n := b.Sequence()
	if old := b.Get(e.key); old != nil {
		ended, err := record.SMTPSessionEnded(old)
		if err == nil && ended && !e.ended {
			return nil
		}
		// A session's recipients only grow, but the contract is a
		// replacement: the index follows the record.
		if prev, err := record.DecodeSMTPSession(old); err == nil {
			for _, inbox := range prev.Inboxes() {
				if !slices.Contains(e.inboxes, inbox) {
					if err := to.Delete(smtpLogToKey(inbox, e.key)); err != nil {
						return err
					}
				}
			}
		}
	} else {
		n++
	}
	if err := b.Put(e.key, e.value); err != nil {
		return err
	}
	for _, inbox := range e.inboxes {
		if err := to.Put(smtpLogToKey(inbox, e.key), nil); err != nil {
			return err
		}
	}
	return b.SetSequence(n)
}

// deleteSMTPSession deletes the record at k, v and its index entries.
// A record that does not decode goes without them: check reports the
// entries left.
func deleteSMTPSession(tx *bolt.Tx, k, v []byte) error {
	b := tx.Bucket(bucketSMTPLog)
	if s, err := record.DecodeSMTPSession(v); err == nil {
		for _, inbox := range s.Inboxes() {
			if err := tx.Bucket(bucketSMTPLogTo).Delete(smtpLogToKey(inbox, k)); err != nil {
				return err
			}
		}
	}
	if err := b.Delete(k); err != nil {
		return err
	}
	return b.SetSequence(b.Sequence() - min(b.Sequence(), 1))
}

// trimSMTPLog deletes the oldest records beyond max, at most most of them
// (-1: all), and returns how many it deleted.
func trimSMTPLog(tx *bolt.Tx, max, most int) (int, error) {
	b := tx.Bucket(bucketSMTPLog)
	over := int(b.Sequence()) - max
	if max <= 0 || over <= 0 {
		return 0, nil
	}
	if most >= 0 {
		over = min(over, most)
	}
	return deleteSMTPLogWhile(tx, over, func([]byte) bool { return true })
}

// deleteSMTPLogWhile deletes records from the oldest on while del says
// so of their key, at most most of them, and returns how many.
func deleteSMTPLogWhile(tx *bolt.Tx, most int, del func(key []byte) bool) (int, error) {
	var keys, values [][]byte
	c := tx.Bucket(bucketSMTPLog).Cursor()
	for k, v := c.First(); k != nil && len(keys) < most && del(k); k, v = c.Next() {
		keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
	}
	// Deleted after the walk: a cursor that deletes as it goes skips
	// the record after each one it deletes.
	for i, k := range keys {
		if err := deleteSMTPSession(tx, k, values[i]); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

// WriteSMTPSessions writes recs in one transaction (storage.Engine).
func (db *DB) WriteSMTPSessions(ctx context.Context, recs []storage.SMTPSession) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries := make([]smtpLogEntry, len(recs))
	for i := range recs {
		var err error
		if entries[i], err = newSMTPLogEntry(&recs[i]); err != nil {
			return fmt.Errorf("write smtp sessions: %w", err)
		}
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		tx.Bucket(bucketSMTPLog).FillPercent = 0.9 // as deliveries write it
		for _, e := range entries {
			if err := putSMTPSession(tx, e); err != nil {
				return err
			}
		}
		_, err := trimSMTPLog(tx, db.retention.MaxSessions, -1)
		return err
	})
	if err != nil {
		return fmt.Errorf("write smtp sessions: %w", err)
	}
	return nil
}

// SMTPSessions returns the records q selects, newest first
// (storage.Engine).
func (db *DB) SMTPSessions(ctx context.Context, q storage.SMTPSessionQuery) ([]storage.SMTPSession, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = storage.DefaultSMTPSessions
	}
	var out []storage.SMTPSession
	err := db.bolt.View(func(tx *bolt.Tx) error {
		out = nil
		b := tx.Bucket(bucketSMTPLog)
		if b == nil {
			return nil
		}
		// Keys start with be64(startedAt): past since's millisecond, or at
		// it when since has more (startedAt is whole milliseconds).
		after := func(key []byte) bool {
			return q.Since.IsZero() || int64(binary.BigEndian.Uint64(key)) > record.FloorMilli(q.Since)
		}
		take := func(k, v []byte) error {
			s, err := record.DecodeSMTPSession(v)
			if err != nil {
				return fmt.Errorf("smtp session %x: %w", k, err)
			}
			if q.Inbox == "" || slices.Contains(s.Inboxes(), q.Inbox) {
				out = append(out, s)
			}
			return nil
		}
		if q.Inbox == "" {
			c := b.Cursor()
			for k, v := c.Last(); k != nil && len(out) < limit && after(k); k, v = c.Prev() {
				if err := take(k, v); err != nil {
					return err
				}
			}
			return nil
		}
		prefix := append([]byte(q.Inbox), 0)
		c := tx.Bucket(bucketSMTPLogTo).Cursor()
		k, _ := c.Seek(append(bytes.Clone(prefix), 0xff))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
			key := k[len(prefix):]
			if !after(key) {
				break
			}
			if v := b.Get(key); v != nil {
				if err := take(key, v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("smtp sessions: %w", err)
	}
	return out, nil
}

// sweepSMTPLog deletes the oldest records beyond Retention.MaxSessions
// and those older than Retention.SessionsMaxAge, smallTx at a time.
func (db *DB) sweepSMTPLog(ctx context.Context) error {
	cutoff := record.CeilMilli(db.now().Add(-db.retention.SessionsMaxAge)) // startedAt < cutoff
	for _, step := range []func(tx *bolt.Tx) (int, error){
		func(tx *bolt.Tx) (int, error) { return trimSMTPLog(tx, db.retention.MaxSessions, smallTx) },
		func(tx *bolt.Tx) (int, error) {
			if db.retention.SessionsMaxAge <= 0 {
				return 0, nil
			}
			return deleteSMTPLogWhile(tx, smallTx, func(k []byte) bool { return int64(binary.BigEndian.Uint64(k)) < cutoff })
		},
	} {
		for n := smallTx; n == smallTx; {
			if err := ctx.Err(); err != nil {
				return err
			}
			// A look first: a sweep that finds nothing to do costs no commit.
			var due bool
			if err := db.bolt.View(func(tx *bolt.Tx) error {
				c := tx.Bucket(bucketSMTPLog).Cursor()
				k, _ := c.First()
				due = k != nil && (int64(binary.BigEndian.Uint64(k)) < cutoff && db.retention.SessionsMaxAge > 0 ||
					db.retention.MaxSessions > 0 && int(tx.Bucket(bucketSMTPLog).Sequence()) > db.retention.MaxSessions)
				return nil
			}); err != nil || !due {
				return err
			}
			if err := db.bolt.Update(func(tx *bolt.Tx) error {
				var err error
				n, err = step(tx)
				return err
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSMTPLog checks that every record of the session log decodes under
// its key, that the bucket's sequence counts them, and that the index
// holds each record under its inboxes and nothing else.
func checkSMTPLog(tx *bolt.Tx, r *storage.CheckReport) {
	b, to := tx.Bucket(bucketSMTPLog), tx.Bucket(bucketSMTPLogTo)
	if b == nil || to == nil {
		r.Problemf("bucket %q or %q is missing", bucketSMTPLog, bucketSMTPLogTo)
		return
	}
	n := uint64(0)
	b.ForEach(func(k, v []byte) error {
		n++
		s, err := record.DecodeSMTPSession(v)
		if err != nil {
			r.Problemf("smtp session %x: %v", k, err)
			return nil
		}
		if e, err := newSMTPLogEntry(&s); err != nil || !bytes.Equal(e.key, k) {
			r.Problemf("smtp session %x is not under the key of its id and start (%v)", k, err)
		}
		for _, inbox := range s.Inboxes() {
			if !hasKey(to, smtpLogToKey(inbox, k)) {
				r.Problemf("smtp session %s is not indexed under inbox %q", s.ID, inbox)
			}
		}
		return nil
	})
	if n != b.Sequence() {
		r.Problemf("the session log holds %d records, but counts %d", n, b.Sequence())
	}
	to.ForEach(func(k, _ []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(k) != i+1+24 {
			r.Problemf("smtp session index key %x is malformed", k)
			return nil
		}
		v := b.Get(k[i+1:])
		if v == nil {
			r.Problemf("smtp session index entry %q points to no record", k)
			return nil
		}
		if s, err := record.DecodeSMTPSession(v); err == nil && !slices.Contains(s.Inboxes(), string(k[:i])) {
			r.Problemf("smtp session %s is indexed under inbox %q, which it did not name", s.ID, k[:i])
		}
		return nil
	})
}

// hasKey reports whether b holds key, with or without a value: Get
// returns nil for a key whose value is empty.
func hasKey(b *bolt.Bucket, key []byte) bool {
	k, _ := b.Cursor().Seek(key)
	return bytes.Equal(k, key)
}
