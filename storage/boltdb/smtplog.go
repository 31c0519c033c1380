package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// The SMTP session log (spec §13.1; storage.Engine). The layout:
//
//	smtplog: be64(startedAt unix ms) uuid(16) -> record (record.EncodeSMTPSession)
//
// The keys sort by start, then id: the order of the log, newest last, so
// that a listing of every session walks backwards from the end and the
// sweeper deletes from the start. The bucket's sequence counts its
// records, so that the cap (Retention.MaxSessions) costs no scan: a
// bucket's sequence is kept in its header, which any write to the bucket
// rewrites anyway.
//
// A listing by inbox reads an index held in memory (smtpIndex): the keys
// of each inbox's records, built at Open from the records
// (record.SMTPSessionInboxes reads no more of one than its recipients)
// and kept by every commit that writes or deletes one, when it commits
// (bbolt's OnCommit). One process has the file, so memory is as good as
// the file for it, and a delivery writes no index page: an index bucket
// cost each delivery 0.75 pages more (BenchmarkSessionRecord, 4.7 pages
// a message without the log, 6.2 with it and that bucket, 5.5 with it
// alone). Two commits' updates of the index may come in the other order;
// a key whose record is gone is dropped when a listing meets it.
//
// A delivery writes its session's record in its own transaction (put); the
// rest come in batches (WriteSMTPSessions). Either way a record still open
// never replaces an ended one.

var bucketSMTPLog = []byte("smtplog")

// smtpLogKey is a record's key: be64(startedAt unix ms) uuid(16).
type smtpLogKey [24]byte

// smtpLogEntry is a record ready to be written: its key, its inboxes and
// its encoding, made before the transaction.
type smtpLogEntry struct {
	key     smtpLogKey
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
	var key smtpLogKey
	binary.BigEndian.PutUint64(key[:8], uint64(s.StartedAt.UnixMilli()))
	copy(key[8:], id[:])
	return smtpLogEntry{key: key, inboxes: s.Inboxes(), ended: s.EndedAt != nil, value: v}, nil
}

// smtpIndex is the log's index by inbox: the keys of each inbox's
// records, in key order. It is safe for concurrent use.
type smtpIndex struct {
	mu      sync.RWMutex
	byInbox map[string][]smtpLogKey
}

// add indexes key under inboxes.
func (x *smtpIndex) add(key smtpLogKey, inboxes []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byInbox == nil {
		x.byInbox = make(map[string][]smtpLogKey)
	}
	for _, inbox := range inboxes {
		keys := x.byInbox[inbox]
		i, found := slices.BinarySearchFunc(keys, key, compareKeys)
		if !found {
			x.byInbox[inbox] = slices.Insert(keys, i, key) // nearly always at the end
		}
	}
}

// remove drops key from the index of each of inboxes.
func (x *smtpIndex) remove(key smtpLogKey, inboxes []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, inbox := range inboxes {
		keys := x.byInbox[inbox]
		if i, found := slices.BinarySearchFunc(keys, key, compareKeys); found {
			if i == 0 {
				keys = keys[1:] // the sweeper deletes the oldest: no copy
			} else {
				keys = slices.Delete(keys, i, i+1)
			}
			if len(keys) == 0 {
				delete(x.byInbox, inbox)
			} else {
				x.byInbox[inbox] = keys
			}
		}
	}
}

// newest returns the keys of inbox after since (a unix ms floor; -1 for
// every key), newest first, at most n of them, and skipping the first
// skip.
func (x *smtpIndex) newest(inbox string, since int64, skip, n int) []smtpLogKey {
	x.mu.RLock()
	defer x.mu.RUnlock()
	keys := x.byInbox[inbox]
	var out []smtpLogKey
	for i := len(keys) - 1 - skip; i >= 0 && len(out) < n; i-- {
		if int64(binary.BigEndian.Uint64(keys[i][:8])) <= since {
			break
		}
		out = append(out, keys[i])
	}
	return out
}

func compareKeys(a, b smtpLogKey) int { return bytes.Compare(a[:], b[:]) }

// buildSMTPIndex indexes every record of the log.
func (db *DB) buildSMTPIndex() error {
	return db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSMTPLog)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			inboxes, err := record.SMTPSessionInboxes(v)
			if err != nil || len(k) != len(smtpLogKey{}) {
				return nil // check reports it; a listing cannot show it
			}
			db.smtpIndex.add(smtpLogKey(k), inboxes)
			return nil
		})
	})
}

// putSMTPSession writes e in tx, unless the record of its session there
// is ended and e is not; it counts a new record in the bucket's sequence,
// and indexes it when tx commits.
func (db *DB) putSMTPSession(tx *bolt.Tx, e smtpLogEntry) error {
	b := tx.Bucket(bucketSMTPLog)
	n := b.Sequence()
	var gone []string // inboxes the record named and names no more
	if old := b.Get(e.key[:]); old != nil {
		ended, err := record.SMTPSessionEnded(old)
		if err == nil && ended && !e.ended {
			return nil
		}
		// A session's recipients only grow, but the contract is a
		// replacement: the index follows the record.
		if prev, err := record.SMTPSessionInboxes(old); err == nil {
			for _, inbox := range prev {
				if !slices.Contains(e.inboxes, inbox) {
					gone = append(gone, inbox)
				}
			}
		}
	} else {
		n++
	}
	if err := b.Put(e.key[:], e.value); err != nil {
		return err
	}
	tx.OnCommit(func() {
		db.smtpIndex.remove(e.key, gone)
		db.smtpIndex.add(e.key, e.inboxes)
	})
	return b.SetSequence(n)
}

// deleteSMTPSession deletes the record at k, v, and drops it from the
// index when tx commits.
func (db *DB) deleteSMTPSession(tx *bolt.Tx, k, v []byte) error {
	b := tx.Bucket(bucketSMTPLog)
	if err := b.Delete(k); err != nil {
		return err
	}
	if inboxes, err := record.SMTPSessionInboxes(v); err == nil && len(k) == len(smtpLogKey{}) {
		key := smtpLogKey(k)
		tx.OnCommit(func() { db.smtpIndex.remove(key, inboxes) })
	}
	return b.SetSequence(b.Sequence() - min(b.Sequence(), 1))
}

// trimSMTPLog deletes the oldest records beyond max, at most most of
// them, and returns how many it deleted.
func (db *DB) trimSMTPLog(tx *bolt.Tx, max, most int) (int, error) {
	over := int(tx.Bucket(bucketSMTPLog).Sequence()) - max
	if max <= 0 || over <= 0 {
		return 0, nil
	}
	return db.deleteSMTPLogWhile(tx, min(over, most), func([]byte) bool { return true })
}

// deleteSMTPLogWhile deletes records from the oldest on while del says
// so of their key, at most most of them, and returns how many.
func (db *DB) deleteSMTPLogWhile(tx *bolt.Tx, most int, del func(key []byte) bool) (int, error) {
	var keys, values [][]byte
	c := tx.Bucket(bucketSMTPLog).Cursor()
	for k, v := c.First(); k != nil && len(keys) < most && del(k); k, v = c.Next() {
		keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
	}
	// Deleted after the walk: a cursor that deletes as it goes skips
	// the record after each one it deletes.
	for i, k := range keys {
		if err := db.deleteSMTPSession(tx, k, values[i]); err != nil {
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
		tx.Bucket(bucketSMTPLog).FillPercent = 0.9 // as deliveries write them
		for _, e := range entries {
			if err := db.putSMTPSession(tx, e); err != nil {
				return err
			}
		}
		// As a delivery does: a few beyond what it adds, so that a cap
		// just lowered is the sweeper's, in small transactions.
		_, err := db.trimSMTPLog(tx, db.retention.MaxSessions, len(entries)+trimAtDelivery)
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
	since := int64(-1) // keys start with be64(startedAt), whole milliseconds
	if !q.Since.IsZero() {
		since = record.FloorMilli(q.Since)
	}
	var out []storage.SMTPSession
	var stale []smtpLogKey // index entries whose record is gone
	err := db.bolt.View(func(tx *bolt.Tx) error {
		out, stale = nil, nil
		b := tx.Bucket(bucketSMTPLog)
		if b == nil {
			return nil
		}
		take := func(k, v []byte) error {
			s, err := record.DecodeSMTPSession(v)
			if err != nil {
				return fmt.Errorf("smtp session %x: %w", k, err)
			}
			out = append(out, s)
			return nil
		}
		if q.Inbox == "" {
			c := b.Cursor()
			for k, v := c.Last(); k != nil && len(out) < limit && int64(binary.BigEndian.Uint64(k)) > since; k, v = c.Prev() {
				if err := take(k, v); err != nil {
					return err
				}
			}
			return nil
		}
		for skip := 0; len(out) < limit; {
			keys := db.smtpIndex.newest(q.Inbox, since, skip, limit-len(out))
			if len(keys) == 0 {
				return nil
			}
			skip += len(keys)
			for _, k := range keys {
				v := b.Get(k[:])
				if v == nil {
					stale = append(stale, k)
					continue
				}
				if err := take(k[:], v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	for _, k := range stale {
		db.smtpIndex.remove(k, []string{q.Inbox})
	}
	if err != nil {
		return nil, fmt.Errorf("smtp sessions: %w", err)
	}
	return out, nil
}

// sweepSMTPLog deletes the oldest records beyond Retention.MaxSessions
// and those older than Retention.SessionsMaxAge, smallTx at a time. Each
// step looks first, so that a sweep with nothing to do costs no commit.
func (db *DB) sweepSMTPLog(ctx context.Context) error {
	cutoff := record.CeilMilli(db.now().Add(-db.retention.SessionsMaxAge)) // startedAt < cutoff
	tooOld := func(k []byte) bool {
		return db.retention.SessionsMaxAge > 0 && int64(binary.BigEndian.Uint64(k)) < cutoff
	}
	steps := []struct {
		due func(b *bolt.Bucket) bool
		run func(tx *bolt.Tx) (int, error)
	}{{
		func(b *bolt.Bucket) bool {
			return db.retention.MaxSessions > 0 && int(b.Sequence()) > db.retention.MaxSessions
		},
		func(tx *bolt.Tx) (int, error) { return db.trimSMTPLog(tx, db.retention.MaxSessions, smallTx) },
	}, {
		func(b *bolt.Bucket) bool { k, _ := b.Cursor().First(); return k != nil && tooOld(k) },
		func(tx *bolt.Tx) (int, error) { return db.deleteSMTPLogWhile(tx, smallTx, tooOld) },
	}}
	for _, step := range steps {
		for n := smallTx; n == smallTx; {
			if err := ctx.Err(); err != nil {
				return err
			}
			var due bool
			if err := db.bolt.View(func(tx *bolt.Tx) error {
				due = step.due(tx.Bucket(bucketSMTPLog))
				return nil
			}); err != nil {
				return err
			}
			if !due {
				break
			}
			if err := db.bolt.Update(func(tx *bolt.Tx) error {
				var err error
				n, err = step.run(tx)
				return err
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSMTPLog checks that every record of the session log decodes under
// its key, and that the bucket's sequence counts them.
func checkSMTPLog(tx *bolt.Tx, r *storage.CheckReport) {
	b := tx.Bucket(bucketSMTPLog)
	if b == nil {
		r.Problemf("bucket %q is missing", bucketSMTPLog)
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
		if e, err := newSMTPLogEntry(&s); err != nil || !bytes.Equal(e.key[:], k) {
			r.Problemf("smtp session %x is not under the key of its id and start (%v)", k, err)
		}
		return nil
	})
	if n != b.Sequence() {
		r.Problemf("the session log holds %d records, but counts %d", n, b.Sequence())
	}
}
