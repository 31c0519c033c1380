package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// Export calls v's functions for every key, message and webhook event in
// the file, from one read transaction (storage.Exporter). Messages come
// in the order of their content keys, which is the order they were
// committed in.
func (db *DB) Export(ctx context.Context, v storage.ExportVisitor) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The outcomes not yet written are the events' as much as the file's
	// records: a completed event is not exported, a retried one with its
	// attempts and due time. Those settled from now on may be missed,
	// as if settled after the export.
	var ops map[string]outboxOp
	if v.Event != nil {
		db.outbox.mu.Lock()
		ops = maps.Clone(db.outbox.ops)
		db.outbox.mu.Unlock()
	}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		if v.Key != nil {
			if err := db.exportKeys(tx, v.Key); err != nil {
				return err
			}
		}
		if v.Message != nil {
			if err := exportMessages(ctx, tx, v.Message); err != nil {
				return err
			}
		}
		if v.Event != nil {
			o := outboxOf(tx)
			return o.each(func(ident []byte, _ byte, rec []byte) error {
				op, settled := ops[string(ident)]
				if settled && op.done {
					return nil
				}
				e, err := o.read(ident, rec)
				if err != nil {
					return fmt.Errorf("event %x: %w", ident, err)
				}
				if settled {
					e.Attempts, e.Next = op.attempts, op.next
				}
				return v.Event(e)
			})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// exportKeys gives each key with its last use, the one in memory if it is
// newer than the file's.
func (db *DB) exportKeys(tx *bolt.Tx, fn func(storage.StoredKey) error) error {
	return tx.Bucket(bucketKeys).ForEach(func(id, rec []byte) error {
		k, hash, err := decodeKey(id, rec)
		if err != nil {
			return fmt.Errorf("key %q: %w", id, err)
		}
		db.usage.Apply(&k)
		return fn(storage.StoredKey{Key: k, Hash: storage.KeyHash(hash)})
	})
}

// exportMessages gives every message with its emails. A content record
// does not list its emails, so one pass over the emails finds them first:
// 30-odd bytes of memory per email.
func exportMessages(ctx context.Context, tx *bolt.Tx, fn func(*storage.StoredMessage) error) error {
	emails := tx.Bucket(bucketEmails)
	byContent := make(map[[8]byte][][]byte)
	if err := emails.ForEach(func(key, rec []byte) error {
		if len(rec) < emailFixedLen || len(key) < 17 {
			return fmt.Errorf("email %x: %w", key, storage.ErrCorrupt)
		}
		ckey := [8]byte(recordContentKey(rec))
		byContent[ckey] = append(byContent[ckey], key) // valid for the transaction
		return nil
	}); err != nil {
		return err
	}
	raws, parts, auths := tx.Bucket(bucketRaw), tx.Bucket(bucketParts), tx.Bucket(bucketAuth)
	n := 0
	return tx.Bucket(bucketContents).ForEach(func(ckey, rec []byte) error {
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		keys := byContent[[8]byte(ckey)]
		if len(keys) == 0 {
			return nil // no email left: the sweep of a crashed delete forgot it
		}
		// The arrival order of a message's emails is that of their seq.
		slices.SortFunc(keys, func(a, b []byte) int { return bytes.Compare(a[len(a)-8:], b[len(b)-8:]) })
		m := &storage.StoredMessage{Emails: make([]storage.Email, len(keys))}
		for i, key := range keys {
			e, _, err := decodeEmail(key, emails.Get(key))
			if err != nil {
				return fmt.Errorf("email %x: %w", key, err)
			}
			m.Emails[i] = e
		}
		first := m.Emails[0]
		m.Message = storage.Message{From: first.From, FromName: first.FromName, Subject: first.Subject}
		if err := decodeStored(&m.Message, rec, raws.Get(ckey)); err != nil {
			return fmt.Errorf("content %x: %w", ckey, err)
		}
		if v := parts.Get(ckey); v != nil {
			a, ok, err := record.DecodeAttachments(v)
			if err != nil {
				return fmt.Errorf("attachments %x: %w", ckey, err)
			}
			if ok {
				m.Attachments = &a
			}
		}
		if v := auths.Get(ckey); v != nil {
			r, err := record.DecodeAuth(v)
			if err != nil {
				return fmt.Errorf("authentication record %x: %w", ckey, err)
			}
			m.Auth = &r
		}
		return fn(m)
	})
}

// decodeStored fills msg's body, search text, header fields, plain text,
// links and raw source from a content record and its raw value.
func decodeStored(msg *storage.Message, rec, raw []byte) error {
	c, err := decodeContent(rec)
	if err != nil {
		return err
	}
	cd, err := decodeCold(&c, raw)
	if err != nil {
		return err
	}
	msg.Text = string(c.text)
	if c.hasBody {
		msg.Body = bodyString(c.body)
		if msg.Body == nil {
			msg.Body = new(string)
		}
	}
	n, w := binary.Uvarint(c.headers)
	rest := c.headers[w:]
	msg.Headers = make([]storage.Header, 0, n)
	for range n {
		var name, value []byte
		name, rest, _ = record.CutString(rest)
		value, rest, _ = record.CutString(rest)
		msg.Headers = append(msg.Headers, storage.Header{Name: string(name), Value: string(value)})
	}
	msg.Plain = string(cd.plain)
	msg.Raw = bytes.Clone(cd.raw)
	msg.Links, err = record.DecodeStrings(cd.links)
	return err
}

// importBatch bounds what one import transaction writes: bbolt keeps a
// transaction's pages in memory until it commits.
const (
	importBatchMessages = 512
	importBatchBytes    = 32 << 20
)

// Import copies everything src exports into the file, which must hold no
// email, key or event (storage.Engine.Import). It writes in transactions of at
// most a few thousand emails; the emails keep their ids, receivedAt and
// read flags, the keys their hashes, scopes and times, the events their
// attempts and due times. No retention is applied and no webhook event
// made.
func (db *DB) Import(ctx context.Context, src storage.Exporter, progress func(storage.CopyCount)) (storage.CopyCount, error) {
	var count storage.CopyCount
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketEmails, bucketContents, bucketKeys, bucketOutbox, bucketOutboxNew} {
			if k, _ := tx.Bucket(b).Cursor().First(); k != nil {
				return storage.ErrNotNew
			}
		}
		return nil
	}); err != nil {
		return count, fmt.Errorf("import into %s: %w", db.Path(), err)
	}
	var (
		batch []func(*bolt.Tx) error
		added storage.CopyCount // what batch holds
		size  int64             // the raw bytes batch holds
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			tx.Bucket(bucketContents).FillPercent = 1.0
			tx.Bucket(bucketRaw).FillPercent = 1.0
			for _, put := range batch {
				if err := put(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		count.Keys += added.Keys
		count.Messages += added.Messages
		count.Emails += added.Emails
		count.Events += added.Events
		count.Bytes += added.Bytes
		batch, added, size = batch[:0], storage.CopyCount{}, 0
		if progress != nil {
			progress(count)
		}
		return ctx.Err()
	}
	add := func(put func(*bolt.Tx) error, n int64) error {
		batch = append(batch, put)
		if size += n; len(batch) >= importBatchMessages || size >= importBatchBytes {
			return flush()
		}
		return nil
	}
	err := src.Export(ctx, storage.ExportVisitor{
		Key: func(k storage.StoredKey) error {
			added.Keys++
			return add(func(tx *bolt.Tx) error { return putKey(tx, k) }, 0)
		},
		Message: func(m *storage.StoredMessage) error {
			put, err := importMessage(m)
			if err != nil {
				return err
			}
			added.Messages++
			added.Emails += len(m.Emails)
			added.Bytes += int64(len(m.Message.Raw))
			return add(put, int64(len(m.Message.Raw)))
		},
		Event: func(e storage.Event) error {
			put, err := importEvent(e)
			if err != nil {
				return err
			}
			added.Events++
			return add(put, int64(len(e.Email.To)))
		},
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return count, fmt.Errorf("import into %s: %w", db.Path(), err)
	}
	return count, nil
}

// putKey writes a key as it was stored, unless its name or hash is taken.
func putKey(tx *bolt.Tx, sk storage.StoredKey) error {
	sk, err := record.CleanKey(sk)
	if err != nil {
		return err
	}
	k := sk.Key
	keys, hashes := tx.Bucket(bucketKeys), tx.Bucket(bucketKeyHashes)
	if keys.Get([]byte(k.ID)) != nil || hashes.Get(sk.Hash[:]) != nil {
		return fmt.Errorf("key %q: %w", k.Name, storage.ErrKeyExists)
	}
	if _, _, err := findKey(keys, k.Name); err == nil {
		return fmt.Errorf("key %q: %w", k.Name, storage.ErrKeyExists)
	}
	if err := keys.Put([]byte(k.ID), encodeKey(k, sk.Hash[:])); err != nil {
		return err
	}
	return hashes.Put(sk.Hash[:], []byte(k.ID))
}

// importMessage encodes m, in the caller's goroutine, and returns what
// writes it in a transaction.
func importMessage(m *storage.StoredMessage) (func(*bolt.Tx) error, error) {
	ids, err := record.CleanMessage(m)
	if err != nil {
		return nil, err
	}
	type email struct {
		inbox []byte
		at    time.Time
		id    uuid.UUID
		rec   []byte
	}
	// Message.Text is the search text as stored, which AppendSearchText
	// in encodeContent gives back as it is.
	content, raw, sig := encodeContent(len(m.Emails), &m.Message)
	emails := make([]email, len(m.Emails))
	for i, e := range m.Emails {
		e.From, e.FromName, e.Subject = m.Message.From, m.Message.FromName, m.Message.Subject
		emails[i] = email{inbox: inboxName(storage.LocalPart(e.To)), at: e.ReceivedAt, id: ids[i],
			rec: encodeEmail(&e, ids[i], make([]byte, 8), sig)}
	}
	var parts, auth []byte
	if m.Attachments != nil {
		parts = record.EncodeAttachments(*m.Attachments)
	}
	if m.Auth != nil {
		auth = record.EncodeAuth(*m.Auth)
	}
	return func(tx *bolt.Tx) error {
		contents, eb, ids := tx.Bucket(bucketContents), tx.Bucket(bucketEmails), tx.Bucket(bucketIDs)
		cseq, err := contents.NextSequence()
		if err != nil {
			return err
		}
		ckey := be64(cseq)
		if err := contents.Put(ckey, content); err != nil {
			return err
		}
		if err := tx.Bucket(bucketRaw).Put(ckey, raw); err != nil {
			return err
		}
		if parts != nil {
			if err := tx.Bucket(bucketParts).Put(ckey, parts); err != nil {
				return err
			}
		}
		if auth != nil {
			if err := tx.Bucket(bucketAuth).Put(ckey, auth); err != nil {
				return err
			}
		}
		for _, e := range emails {
			if ids.Get(e.id[:]) != nil {
				return fmt.Errorf("email %s: copied twice", e.id)
			}
			seq, err := eb.NextSequence()
			if err != nil {
				return err
			}
			copy(e.rec[18:26], ckey)
			key := emailKey(e.inbox, e.at, seq)
			if err := eb.Put(key, e.rec); err != nil {
				return err
			}
			if err := ids.Put(e.id[:], key); err != nil {
				return err
			}
			if err := addCount(tx, key, 1); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// importEvent returns what writes e in a transaction, with its message
// inline: in the 'n' range when it was never retried, else in the 'r'
// range with its due key.
func importEvent(e storage.Event) (func(*bolt.Tx) error, error) {
	e, id, err := record.CleanEvent(e)
	if err != nil {
		return nil, err
	}
	hook := append([]byte(e.Hook), 0)
	msg := encodeEventMsg(&storage.Message{From: e.Email.From, FromName: e.Email.FromName, Subject: e.Email.Subject, Body: e.Email.Body})
	received, next := e.Email.ReceivedAt, e.Next
	ident := eventKey(hook, received, id)
	rec := encodeEventInline(e.Attempts, next, e.Email.To, msg)
	return func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutbox)
		if e.Attempts == 0 && next.Equal(received) {
			return b.Put(outboxKey(kindNew, ident, len(hook)), rec)
		}
		if err := b.Put(outboxKey(kindRetry, ident, len(hook)), rec); err != nil {
			return err
		}
		return b.Put(dueKey(ident, len(hook), next), nil)
	}, nil
}
