package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"time"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// List returns the emails of q.LocalPart that match q, newest first (equal
// times in reverse arrival order), as storage.Engine's List. With q.AfterID
// or q.BeforeID it returns ErrNotFound when that email does not exist (or
// is in another inbox).
func (db *DB) List(ctx context.Context, q storage.Query) ([]storage.Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := match.New(q)
	var out []storage.Email
	err := db.bolt.View(func(tx *bolt.Tx) error {
		prefix := inboxPrefix(q.LocalPart)
		after, err := inboxKey(tx, prefix, q.AfterID) // keys at or before it are not listed
		if err != nil {
			return err
		}
		start, err := inboxKey(tx, prefix, q.BeforeID) // the walk starts below it
		if err != nil {
			return err
		}
		if start == nil {
			start = prefixEnd(prefix)
		}
		if !q.Before.IsZero() {
			if t := beforeKey(prefix, q.Before); bytes.Compare(t, start) < 0 {
				start = t
			}
		}
		w := &walk{
			emails:   tx.Bucket(bucketEmails).Cursor(),
			contents: tx.Bucket(bucketContents).Cursor(),
			prefix:   prefix,
			after:    after,
			since:    q.Since,
			m:        m,
		}
		w.k, w.v = w.emails.Seek(start)
		if w.k == nil {
			w.k, w.v = w.emails.Last()
		} else {
			w.k, w.v = w.emails.Prev()
		}
		workers := runtime.GOMAXPROCS(0)
		if m.ReadsText() && workers > 1 && inboxCount(tx, prefix[:len(prefix)-1]) >= parallelScan {
			out, err = w.parallel(q, workers)
		} else {
			out, err = w.serial(q)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", q.LocalPart, err)
	}
	return out, nil
}

// beforeKey returns the first key of the inbox of prefix whose email was
// not received strictly before t: the keys of the emails received before t
// sort below it. Keys hold milliseconds, so it rounds t up to one.
func beforeKey(prefix []byte, t time.Time) []byte {
	ms := max(record.CeilMilli(t), 0) // receivedAt is never before 1970
	return binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(ms))
}

// parallelScan is the size of inbox from which List decodes and matches
// the text of its emails on all cores: about 1 µs an email (docs/performance.md),
// most of it waiting for memory, so that two cores halve the time of a body
// filter or a search over 10,000 emails.
const parallelScan = 2000

// walk is one List's walk over an inbox, newest first.
type walk struct {
	emails, contents *bolt.Cursor
	prefix, after    []byte
	since            time.Time
	m                *match.Matcher
	k, v             []byte // the email at hand; k is nil past the last
}

// candidate is an email that its record alone does not rule out: its key
// and record, and its content record, all valid in the transaction.
type candidate struct {
	key, rec, content []byte
}

// next returns the next candidate, or ok false at the end of the walk.
func (w *walk) next() (c candidate, ok bool, err error) {
	for ; w.k != nil && bytes.HasPrefix(w.k, w.prefix); w.k, w.v = w.emails.Prev() {
		k, v := w.k, w.v
		if w.after != nil && bytes.Compare(k, w.after) <= 0 {
			break
		}
		if !w.since.IsZero() && !keyTime(k).After(w.since) {
			break // keys only get older from here
		}
		if w.m.Prefilters() {
			// The record's signature rules most emails out of a subject or
			// body filter or a search: the walk does not even parse their
			// records, and the evaluators decode only what may match.
			sig, err := recordSignature(v)
			if err != nil {
				return candidate{}, false, fmt.Errorf("email %x: %w", k, err)
			}
			if !w.m.MayMatch(sig) {
				continue
			}
		}
		ev, err := viewEmail(v)
		if err != nil || len(k) < 17 {
			return candidate{}, false, fmt.Errorf("email %x: %w", k, storage.ErrCorrupt)
		}
		if !w.m.MatchSubject(ev.subject) || !w.m.MatchSender(ev.fromName, ev.from) { // the rest is the evaluator's
			continue
		}
		rec, err := w.content(ev.ckey)
		if err != nil {
			return candidate{}, false, fmt.Errorf("email %x: %w", ev.id, err)
		}
		w.k, w.v = w.emails.Prev()
		return candidate{key: k, rec: v, content: rec}, true, nil
	}
	w.k = nil
	return candidate{}, false, nil
}

// content returns the content record of ckey. An inbox's emails were
// mostly stored in the order of their content keys, so walking an inbox
// backwards mostly wants the record before the last one: a step of the
// cursor, cheaper than a seek from the root.
func (w *walk) content(ckey []byte) ([]byte, error) {
	k, v := w.contents.Prev()
	if !bytes.Equal(k, ckey) {
		k, v = w.contents.Seek(ckey)
	}
	if !bytes.Equal(k, ckey) {
		return nil, storage.ErrCorrupt
	}
	return v, nil
}

// serial lists the walk's emails in this goroutine.
func (w *walk) serial(q storage.Query) ([]storage.Email, error) {
	ev := newEvaluator(w.m)
	ev.noBody = q.NoBody
	defer ev.release()
	var out []storage.Email
	for q.Limit <= 0 || len(out) < q.Limit {
		c, ok, err := w.next()
		if err != nil || !ok {
			return out, err
		}
		e, in, err := ev.eval(c)
		if err != nil {
			return out, err
		}
		if in {
			out = append(out, e)
		}
	}
	return out, nil
}

// inboxKey returns the emails key of the email with id, which must be in
// the inbox of prefix; nil for an empty id; ErrNotFound when there is none.
func inboxKey(tx *bolt.Tx, prefix []byte, id string) ([]byte, error) {
	if id == "" {
		return nil, nil
	}
	uid, err := storage.ParseID(id)
	if err != nil {
		return nil, err
	}
	key := tx.Bucket(bucketIDs).Get(uid[:])
	if key == nil || !bytes.HasPrefix(key, prefix) {
		return nil, storage.ErrNotFound
	}
	return key, nil
}
