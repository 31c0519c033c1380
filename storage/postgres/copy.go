package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Export calls v's functions for every key, message and webhook event in
// the database, from one REPEATABLE READ, read-only transaction: one
// snapshot of the whole store, however many nodes write meanwhile
// (storage.Exporter). Messages come in the order of their first email's
// seq, which is their arrival order. Leases of events are not exported:
// they belong to the nodes of this database.
func (db *DB) Export(ctx context.Context, v storage.ExportVisitor) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if v.Key != nil {
			if err := db.exportKeys(ctx, tx, v.Key); err != nil {
				return err
			}
		}
		if v.Message != nil {
			if err := db.exportMessages(ctx, tx, v.Message); err != nil {
				return err
			}
		}
		if v.Event != nil {
			return exportEvents(ctx, tx, v.Event)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("export: %w", db.fail(err))
	}
	return nil
}

// exportKeys gives each key with its hash and its last use, the one in
// memory if it is newer than the database's. Keys are few: they are read
// whole before the first call.
func (db *DB) exportKeys(ctx context.Context, tx pgx.Tx, fn func(storage.StoredKey) error) error {
	rows, err := tx.Query(ctx, `SELECT `+keyColumns+`, hash FROM keys ORDER BY created, name COLLATE "C"`)
	if err != nil {
		return err
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.StoredKey, error) {
		var (
			sk            storage.StoredKey
			hash          []byte
			created, last int64
		)
		k := &sk.Key
		if err := r.Scan(&k.ID, &k.Name, &created, &last, &k.Scope.Inboxes, &k.Scope.ReadOnly, &k.Scope.Metrics, &hash); err != nil {
			return sk, err
		}
		if len(hash) != len(sk.Hash) {
			return sk, fmt.Errorf("key %q: a hash of %d bytes: %w", k.Name, len(hash), storage.ErrCorrupt)
		}
		copy(sk.Hash[:], hash)
		if len(k.Scope.Inboxes) == 0 {
			k.Scope.Inboxes = nil
		}
		k.Created = record.FromMilli(created)
		if last != 0 {
			k.LastUsed = record.FromMilli(last)
		}
		db.keys.usage.Apply(k)
		return sk, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// exportSQL reads every message with its emails, in the order its first
// email arrived. The joins are outer so that an email whose message is
// missing fails the export rather than vanish from the copy; a message
// without an email (the leftover of two concurrent deletions, which
// Sweep removes) is not read.
const exportSQL = `SELECT e.message, m.id, m.from_addr, m.from_name, m.subject, m.search_text, m.search, m.headers,
		b.id, b.body, b.plain, b.links, b.raw, b.attachments, b.auth, e.ids, e.tos, e.times, e.reads
	FROM (SELECT message, min(seq) AS first, array_agg(id ORDER BY seq) AS ids, array_agg(to_addr ORDER BY seq) AS tos,
			array_agg(received_at ORDER BY seq) AS times, array_agg(read ORDER BY seq) AS reads
		FROM emails GROUP BY message) e
	LEFT JOIN messages m ON m.id = e.message
	LEFT JOIN bodies b ON b.id = e.message
	ORDER BY e.first`

func (db *DB) exportMessages(ctx context.Context, tx pgx.Tx, fn func(*storage.StoredMessage) error) error {
	rows, err := tx.Query(ctx, exportSQL)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var (
			msgID                                 uuid.UUID
			mID, bID                              *uuid.UUID
			from, fromName, subject, search       []byte
			headers, body, plain, links, raw, att []byte
			auth                                  []byte
			searchText                            *string
			ids                                   []uuid.UUID
			tos                                   [][]byte
			times                                 []int64
			reads                                 []bool
		)
		if err := rows.Scan(&msgID, &mID, &from, &fromName, &subject, &searchText, &search, &headers,
			&bID, &body, &plain, &links, &raw, &att, &auth, &ids, &tos, &times, &reads); err != nil {
			return err
		}
		if mID == nil || bID == nil {
			return fmt.Errorf("message %s of email %s: %w: its row is missing", msgID, ids[0], storage.ErrCorrupt)
		}
		m := &storage.StoredMessage{Message: storage.Message{
			From: string(from), FromName: string(fromName), Subject: stringPtr(subject), Body: stringPtr(body),
			Plain: string(plain),
		}}
		if searchText != nil {
			m.Message.Text = *searchText
		} else {
			m.Message.Text = string(search)
		}
		if m.Message.Headers, err = decodeHeaders(headers); err != nil {
			return fmt.Errorf("message %s: headers: %w", msgID, err)
		}
		if m.Message.Links, err = record.DecodeStrings(links); err != nil {
			return fmt.Errorf("message %s: links: %w", msgID, err)
		}
		if m.Message.Raw, err = db.zdec.DecodeAll(raw, []byte{}); err != nil {
			return fmt.Errorf("message %s: raw source: %w: %v", msgID, storage.ErrCorrupt, err)
		}
		if att != nil {
			a, ok, err := record.DecodeAttachments(att)
			if err != nil {
				return fmt.Errorf("message %s: attachments: %w", msgID, err)
			}
			if ok {
				m.Attachments = &a
			}
		}
		if auth != nil {
			r, err := record.DecodeAuth(auth)
			if err != nil {
				return fmt.Errorf("message %s: authentication record: %w", msgID, err)
			}
			m.Auth = &r
		}
		m.Emails = make([]storage.Email, len(ids))
		for i, id := range ids {
			m.Emails[i] = storage.Email{
				ID: id.String(), To: string(tos[i]), ReceivedAt: record.FromMilli(times[i]), Read: reads[i],
				From: m.Message.From, FromName: m.Message.FromName, Subject: m.Message.Subject, Body: m.Message.Body,
			}
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return rows.Err()
}

// decodeHeaders decodes the headers column (codec.go) as it is stored:
// names lower-cased, values folded.
func decodeHeaders(b []byte) ([]storage.Header, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, storage.ErrCorrupt
	}
	rest := b[k:]
	hs := make([]storage.Header, 0, n)
	for range n {
		var name, value []byte
		var ok bool
		if name, rest, ok = record.CutString(rest); !ok {
			return nil, storage.ErrCorrupt
		}
		if value, rest, ok = record.CutString(rest); !ok {
			return nil, storage.ErrCorrupt
		}
		hs = append(hs, storage.Header{Name: string(name), Value: string(value)})
	}
	return hs, nil
}

// exportEvents gives every webhook event waiting, by hook, then in the
// order its email was received.
func exportEvents(ctx context.Context, tx pgx.Tx, fn func(storage.Event) error) error {
	rows, err := tx.Query(ctx, `SELECT e.hook, e.email, e.to_addr, e.received_at, e.next_at, e.attempts,
			m.id IS NOT NULL, m.from_addr, m.from_name, m.subject, m.body
		FROM events e LEFT JOIN event_messages m ON m.id = e.message
		ORDER BY e.hook COLLATE "C", e.received_at, e.email`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			ev                             storage.Event
			id                             uuid.UUID
			to, from, fromName, subj, body []byte
			received, next                 int64
			found                          bool
		)
		if err := rows.Scan(&ev.Hook, &id, &to, &received, &next, &ev.Attempts, &found, &from, &fromName, &subj, &body); err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("event of email %s for hook %s: %w: its message is missing", id, ev.Hook, storage.ErrCorrupt)
		}
		ev.Email = storage.Email{
			ID: id.String(), To: string(to), From: string(from), FromName: string(fromName),
			Subject: stringOf(subj), Body: stringOf(body), ReceivedAt: record.FromMilli(received),
		}
		ev.Next = record.FromMilli(next)
		if err := fn(ev); err != nil {
			return err
		}
	}
	return rows.Err()
}

// importBatch bounds what one import transaction writes, so that a
// transaction stays a few seconds long and its arrays fit in memory.
const (
	importBatchMessages = 512
	importBatchBytes    = 32 << 20
)

// importRows is what one import transaction writes, as the columns of
// its statements.
type importRows struct {
	keys []storage.StoredKey

	msgs        []messageRow
	attachments [][]byte
	auths       [][]byte

	emailIDs, emailMsgs []uuid.UUID
	emailInboxes        []string
	emailTimes          []int64
	emailTo             [][]byte
	emailRead           []bool
	emailSig            [][]byte

	evHooks                               []string
	evEmails                              []uuid.UUID
	evTimes, evNext                       []int64
	evAttempts                            []int32
	evTo                                  [][]byte
	evFrom, evFromName, evSubject, evBody [][]byte

	count storage.CopyCount
	size  int64 // the raw bytes of msgs
}

// Import copies everything src exports into the database, which must hold
// no email, message, key or event (storage.Engine.Import). It writes in
// transactions of at most importBatchMessages messages; the emails keep
// their ids, receivedAt and read flags, the keys their hashes, scopes and
// times, the events their attempts and due times. No retention is
// applied, no notification sent and no webhook event made. An Import that
// fails leaves the batches committed before in the database.
func (db *DB) Import(ctx context.Context, src storage.Exporter, progress func(storage.CopyCount)) (storage.CopyCount, error) {
	var count storage.CopyCount
	if err := ctx.Err(); err != nil {
		return count, err
	}
	if db.readOnly {
		return count, errors.New("import: the database is open read-only")
	}
	var held bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM emails) OR EXISTS (SELECT 1 FROM messages)
		OR EXISTS (SELECT 1 FROM keys) OR EXISTS (SELECT 1 FROM events)`).Scan(&held)
	if err != nil {
		return count, fmt.Errorf("import: %w", db.fail(err))
	}
	if held {
		return count, fmt.Errorf("import: %w", storage.ErrNotNew)
	}
	b := new(importRows)
	flush := func() error {
		if b.count == (storage.CopyCount{}) {
			return nil
		}
		if err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return b.write(ctx, tx) }); err != nil {
			return db.fail(err)
		}
		count.Keys += b.count.Keys
		count.Messages += b.count.Messages
		count.Emails += b.count.Emails
		count.Events += b.count.Events
		count.Bytes += b.count.Bytes
		b = new(importRows)
		if progress != nil {
			progress(count)
		}
		return ctx.Err()
	}
	full := func() error {
		if len(b.msgs)+len(b.keys)+len(b.evHooks) >= importBatchMessages || b.size >= importBatchBytes {
			return flush()
		}
		return nil
	}
	err = src.Export(ctx, storage.ExportVisitor{
		Key: func(k storage.StoredKey) error {
			if err := b.addKey(k); err != nil {
				return err
			}
			return full()
		},
		Message: func(m *storage.StoredMessage) error {
			if err := db.addMessage(b, m); err != nil {
				return err
			}
			return full()
		},
		Event: func(e storage.Event) error {
			if err := b.addEvent(e); err != nil {
				return err
			}
			return full()
		},
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		// The planner's statistics of tables that were empty would lead
		// the first requests astray until autovacuum comes by.
		_, err = db.pool.Exec(ctx, `ANALYZE emails, messages, bodies, keys, events, event_messages`)
		err = db.fail(err)
	}
	if err != nil {
		return count, fmt.Errorf("import: %w", err)
	}
	return count, nil
}

func (b *importRows) addKey(sk storage.StoredKey) error {
	sk, err := record.CleanKey(sk)
	if err != nil {
		return err
	}
	b.keys = append(b.keys, sk)
	b.count.Keys++
	return nil
}

// addMessage encodes m, in the caller's goroutine, as Deliver does: the
// message's id is that of its first email.
func (db *DB) addMessage(b *importRows, m *storage.StoredMessage) error {
	ids, err := record.CleanMessage(m)
	if err != nil {
		return err
	}
	inboxes := make([]string, len(m.Emails))
	for i, e := range m.Emails {
		inboxes[i] = storage.InboxName(storage.LocalPart(e.To))
	}
	// Message.Text is the search text as stored, which AppendSearchText
	// in messageRow gives back as it is; the headers, lower-cased and
	// folded already, are so again alike.
	row := db.messageRow(ids[0], &m.Message)
	b.msgs = append(b.msgs, row)
	var att []byte
	if m.Attachments != nil {
		att = record.EncodeAttachments(*m.Attachments)
	}
	b.attachments = append(b.attachments, att)
	var auth []byte
	if m.Auth != nil {
		auth = record.EncodeAuth(*m.Auth)
	}
	b.auths = append(b.auths, auth)
	for i, e := range m.Emails {
		b.emailIDs = append(b.emailIDs, ids[i])
		b.emailMsgs = append(b.emailMsgs, ids[0])
		b.emailInboxes = append(b.emailInboxes, inboxes[i])
		b.emailTimes = append(b.emailTimes, e.ReceivedAt.UnixMilli())
		b.emailTo = append(b.emailTo, []byte(e.To))
		b.emailRead = append(b.emailRead, e.Read)
		b.emailSig = append(b.emailSig, row.sig)
	}
	b.count.Messages++
	b.count.Emails += len(m.Emails)
	b.count.Bytes += int64(len(m.Message.Raw))
	b.size += int64(len(m.Message.Raw))
	return nil
}

// addEvent adds e with a message of its own, keyed by its email's id:
// the events of one email to several hooks share it, as the events of a
// delivery do.
func (b *importRows) addEvent(e storage.Event) error {
	e, id, err := record.CleanEvent(e)
	if err != nil {
		return err
	}
	received, next := e.Email.ReceivedAt.UnixMilli(), e.Next.UnixMilli()
	b.evHooks = append(b.evHooks, e.Hook)
	b.evEmails = append(b.evEmails, id)
	b.evTimes = append(b.evTimes, received)
	b.evNext = append(b.evNext, next)
	b.evAttempts = append(b.evAttempts, int32(e.Attempts))
	b.evTo = append(b.evTo, []byte(e.Email.To))
	b.evFrom = append(b.evFrom, []byte(e.Email.From))
	b.evFromName = append(b.evFromName, []byte(e.Email.FromName))
	b.evSubject = append(b.evSubject, bytesOf(e.Email.Subject))
	b.evBody = append(b.evBody, bytesOf(e.Email.Body))
	b.count.Events++
	return nil
}

// write writes b in tx.
func (b *importRows) write(ctx context.Context, tx pgx.Tx) error {
	var batch pgx.Batch
	for _, sk := range b.keys {
		k := sk.Key
		inboxes := k.Scope.Inboxes
		if inboxes == nil {
			inboxes = []string{}
		}
		var last int64
		if !k.LastUsed.IsZero() {
			last = k.LastUsed.UnixMilli()
		}
		batch.Queue(`INSERT INTO keys (id, name, created, last_used, hash, inboxes, read_only, metrics) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			k.ID, k.Name, k.Created.UnixMilli(), last, sk.Hash[:], inboxes, k.Scope.ReadOnly, k.Scope.Metrics)
	}
	if len(b.msgs) > 0 {
		cols := make([]any, 0, 15)
		ids := make([]uuid.UUID, len(b.msgs))
		texts := make([]*string, len(b.msgs))
		var bytea [11][][]byte
		for i, r := range b.msgs {
			ids[i], texts[i] = r.id, r.text
			for j, v := range r.bytea {
				bytea[j] = append(bytea[j], v)
			}
		}
		cols = append(cols, ids)
		for _, c := range bytea {
			cols = append(cols, c)
		}
		cols = append(cols, texts, b.attachments, b.auths)
		batch.Queue(`WITH r AS (SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::bytea[], $4::bytea[], $5::bytea[], $6::bytea[],
				$7::bytea[], $8::bytea[], $9::bytea[], $10::bytea[], $11::bytea[], $12::bytea[], $13::text[], $14::bytea[], $15::bytea[])
				AS r(`+messageColumns+`, attachments, auth)),
			m AS (INSERT INTO messages (id, from_addr, from_name, subject, fsubject, fsender, search_text, search, headers)
				SELECT id, from_addr, from_name, subject, fsubject, fsender, search_text, search, headers FROM r)
			INSERT INTO bodies (id, body, plain, links, raw, attachments, auth) SELECT id, body, plain, links, raw, attachments, auth FROM r`,
			cols...)
		// unnest keeps the order of the arrays, and the identity of seq
		// counts up in it: the emails keep their arrival order.
		batch.Queue(`INSERT INTO emails (id, inbox, received_at, message, to_addr, read, sig)
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::uuid[], $5::bytea[], $6::boolean[], $7::bytea[])`,
			b.emailIDs, b.emailInboxes, b.emailTimes, b.emailMsgs, b.emailTo, b.emailRead, b.emailSig)
		batch.Queue(`INSERT INTO inboxes (name) SELECT DISTINCT unnest($1::text[]) ON CONFLICT (name) DO NOTHING`, b.emailInboxes)
	}
	if len(b.evHooks) > 0 {
		batch.Queue(`INSERT INTO event_messages (id, from_addr, from_name, subject, body)
			SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::bytea[], $4::bytea[], $5::bytea[]) ON CONFLICT (id) DO NOTHING`,
			b.evEmails, b.evFrom, b.evFromName, b.evSubject, b.evBody)
		batch.Queue(`INSERT INTO events (hook, email, received_at, next_at, attempts, to_addr, message)
			SELECT h, e, t, n, a, r, e FROM unnest($1::text[], $2::uuid[], $3::bigint[], $4::bigint[], $5::integer[], $6::bytea[])
				AS u(h, e, t, n, a, r)`,
			b.evHooks, b.evEmails, b.evTimes, b.evNext, b.evAttempts, b.evTo)
	}
	return tx.SendBatch(ctx, &batch).Close()
}
