package boltdb

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"

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

// Inboxes returns every inbox, by name. It reads the inboxes bucket
// alone, whose values hold each inbox's count and newest time.
func (db *DB) Inboxes(ctx context.Context) ([]storage.Inbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []storage.Inbox
	err := db.bolt.View(func(tx *bolt.Tx) error {
		emails := tx.Bucket(bucketEmails).Cursor()
		return tx.Bucket(bucketInboxes).ForEach(func(k, v []byte) error {
			out = append(out, inboxOf(emails, k, v))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("inboxes: %w", err)
	}
	return out, nil
}

// RecentInboxes returns the inboxes q keeps, the one with the newest
// email first (then by name), at most q.Limit. It walks the names of the
// inboxes bucket under the prefixes q can match (match.InboxPrefixes),
// whose values hold each inbox's count and newest time: no email is read,
// and an inbox older than the last of the q.Limit newest found so far
// costs no allocation.
func (db *DB) RecentInboxes(ctx context.Context, q storage.InboxQuery) ([]storage.Inbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var top recentHeap
	err := db.bolt.View(func(tx *bolt.Tx) error {
		emails := tx.Bucket(bucketEmails).Cursor()
		c := tx.Bucket(bucketInboxes).Cursor()
		for _, prefix := range match.InboxPrefixes(q) {
			for k, v := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
				if full := q.Limit > 0 && len(top) == q.Limit; full {
					if _, newest, ok := decodeInbox(v); ok && top.beats(newest, k) {
						continue
					}
				}
				// Without patterns the walk's prefix is q's: only a
				// scope's patterns need the rule asked.
				if len(q.Patterns) > 0 && !q.Matches(string(k)) {
					continue
				}
				heap.Push(&top, inboxOf(emails, k, v))
				if q.Limit > 0 && len(top) > q.Limit {
					heap.Pop(&top)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recent inboxes: %w", err)
	}
	out := []storage.Inbox(top)
	slices.SortFunc(out, func(a, b storage.Inbox) int {
		if c := b.Newest.Compare(a.Newest); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// recentHeap holds the recent inboxes found so far, the one that comes
// last in RecentInboxes' order (the oldest newest email, then the last
// name) on top: the first to go when a more recent one comes.
type recentHeap []storage.Inbox

func (h recentHeap) Len() int { return len(h) }
func (h recentHeap) Less(i, j int) bool {
	if !h[i].Newest.Equal(h[j].Newest) {
		return h[i].Newest.Before(h[j].Newest)
	}
	return h[i].Name > h[j].Name
}
func (h recentHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recentHeap) Push(x any)   { *h = append(*h, x.(storage.Inbox)) }
func (h *recentHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// beats reports whether the top of h comes before an inbox called name
// whose newest email came at newest (Unix ms): such an inbox would go at
// once.
func (h recentHeap) beats(newest uint64, name []byte) bool {
	at := h[0].Newest.UnixMilli()
	return int64(newest) < at || int64(newest) == at && string(name) > h[0].Name
}

// inboxOf returns the inbox name with the inboxes value v. A value without
// the newest time (which no file of this schema holds) costs a seek in
// emails for it.
func inboxOf(emails *bolt.Cursor, name, v []byte) storage.Inbox {
	n, newest, ok := decodeInbox(v)
	in := storage.Inbox{Name: string(name), Emails: n, Newest: record.FromMilli(int64(newest))}
	if !ok {
		prefix := append(name[:len(name):len(name)], 0)
		in.Newest, _ = timeIn(newestKey(emails, prefix), prefix)
	}
	return in
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
