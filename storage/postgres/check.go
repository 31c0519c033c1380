package postgres

import (
	"bytes"
	"context"
	"fmt"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Check verifies that burner's tables agree with each other, from one
// REPEATABLE READ, read-only transaction (storage.Engine.Check): the schema is
// of this version; every email points at a message and its body, holds a
// valid inbox name that is that of its recipient, and has a receivedAt of
// its own within its inbox; every message has its body and a search text;
// its headers, links, raw source, attachment index and authentication
// record decode (the record is in its message's body, so it belongs to
// one), and the
// signature its emails hold, if any, is that of its text and fields (a
// wrong one would hide it from a search); every key
// has a valid name, scope and hash; every webhook event has its message;
// every record of the SMTP session log decodes and agrees with its row,
// and every fault rule is valid.
// PostgreSQL keeps its own pages sound; this checks what burner put in
// them. It reads everything, raw sources included, so it takes a while on
// a large database, but it holds no lock that delays mail. It writes
// nothing.
//
// A message or an event message left without an email or event is no
// problem: two concurrent deletions may leave one, which Sweep and
// DropEvents remove. Nor is an inbox lock row of an empty inbox, or an
// email whose inbox has none: Deliver makes it again.
func (db *DB) Check(ctx context.Context) (storage.CheckReport, error) {
	if err := ctx.Err(); err != nil {
		return storage.CheckReport{}, err
	}
	var r storage.CheckReport
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT (SELECT version FROM burner_schema LIMIT 1), pg_database_size(current_database()),
			(SELECT count(*) FROM emails), (SELECT count(DISTINCT inbox) FROM emails),
			(SELECT count(*) FROM messages), (SELECT count(*) FROM keys)`).
			Scan(&r.SchemaVersion, &r.FileBytes, &r.Emails, &r.Inboxes, &r.Messages, &r.Keys)
		if err != nil {
			return err
		}
		if r.SchemaVersion != schemaVersion {
			r.Problemf("schema version is %d, want %d", r.SchemaVersion, schemaVersion)
			return nil // the checks below read this version's tables
		}
		for _, check := range []func(context.Context, pgx.Tx, *storage.CheckReport) error{
			checkEmails, db.checkMessages, checkKeys, checkEvents, checkSMTPLog, checkFaults,
		} {
			if err := check(ctx, tx, &r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return storage.CheckReport{}, fmt.Errorf("check: %w", db.fail(err))
	}
	return r, nil
}

// checkEmails checks each email against its message and its inbox.
func checkEmails(ctx context.Context, tx pgx.Tx, r *storage.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT e.id, e.inbox, e.to_addr, e.message, m.id IS NOT NULL, b.id IS NOT NULL
		FROM emails e LEFT JOIN messages m ON m.id = e.message LEFT JOIN bodies b ON b.id = e.message
		ORDER BY e.seq`)
	if err != nil {
		return err
	}
	var (
		id, msg    uuid.UUID
		inbox      string
		to         []byte
		hasM, hasB bool
		n          int
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &inbox, &to, &msg, &hasM, &hasB}, func() error {
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !hasM {
			r.Problemf("email %s: its message %s is missing", id, msg)
		}
		if !hasB {
			r.Problemf("email %s: the body of its message %s is missing", id, msg)
		}
		local := storage.LocalPart(string(to))
		switch {
		case !storage.ValidLocalPart(inbox) || inbox != storage.InboxName(inbox):
			r.Problemf("email %s: %q is not an inbox name", id, inbox)
		case !storage.ValidLocalPart(local) || storage.InboxName(local) != inbox:
			r.Problemf("email %s: it is in inbox %q, but its recipient is %q", id, inbox, to)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// spec §3: receivedAt strictly increases within an inbox.
	rows, err = tx.Query(ctx, `SELECT inbox, received_at, count(*) FROM emails GROUP BY inbox, received_at HAVING count(*) > 1
		ORDER BY inbox COLLATE "C", received_at`)
	if err != nil {
		return err
	}
	var at, count int64
	_, err = pgx.ForEachRow(rows, []any{&inbox, &at, &count}, func() error {
		r.Problemf("inbox %q: %d emails share the receivedAt %d", inbox, count, at)
		return nil
	})
	return err
}

// checkMessages decodes what each message and its body hold.
func (db *DB) checkMessages(ctx context.Context, tx pgx.Tx, r *storage.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT coalesce(m.id, b.id), m.id IS NOT NULL, b.id IS NOT NULL,
			m.search_text IS NOT NULL, m.search IS NOT NULL, m.headers, b.links, b.raw, b.attachments, b.auth,
			coalesce(convert_to(m.search_text, 'UTF8'), m.search), m.subject, m.from_name, m.from_addr,
			(SELECT array_agg(DISTINCT e.sig) FROM emails e WHERE e.message = m.id AND e.sig IS NOT NULL)
		FROM messages m FULL JOIN bodies b ON b.id = m.id`)
	if err != nil {
		return err
	}
	var (
		id                           uuid.UUID
		hasM, hasB, hasText, hasBlob bool
		headers, links, raw, att     []byte
		auth                         []byte
		n                            int
		buf                          []byte // the raw source, decompressed: reused
		search, from, fromName, subj []byte
		sigs                         [][]byte
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &hasM, &hasB, &hasText, &hasBlob, &headers, &links, &raw, &att, &auth,
		&search, &subj, &fromName, &from, &sigs}, func() error {
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !hasM {
			r.Problemf("body %s: its message is missing", id)
			return nil
		}
		if !hasB {
			r.Problemf("message %s: its body is missing", id)
		} else {
			if _, err := record.DecodeStrings(links); err != nil {
				r.Problemf("message %s: the links do not decode", id)
			}
			var err error
			if buf, err = db.zdec.DecodeAll(raw, buf[:0]); err != nil {
				r.Problemf("message %s: the raw source does not decompress: %v", id, err)
			}
			if att != nil {
				if _, _, err := record.DecodeAttachments(att); err != nil {
					r.Problemf("message %s: the attachment index does not decode", id)
				}
			}
			if auth != nil {
				if _, err := record.DecodeAuth(auth); err != nil {
					r.Problemf("message %s: the authentication record does not decode", id)
				}
			}
		}
		if hasText == hasBlob {
			r.Problemf("message %s: it needs its search text in exactly one of search_text and search", id)
		}
		if _, err := decodeHeaders(headers); err != nil {
			r.Problemf("message %s: the header fields do not decode", id)
		}
		if len(sigs) > 0 {
			want := signature(search, &storage.Message{Subject: stringPtr(subj), FromName: string(fromName), From: string(from)})
			for _, sig := range sigs {
				if !bytes.Equal(sig, want) {
					r.Problemf("message %s: an email of it has a signature that is not its text's", id)
				}
			}
		}
		return nil
	})
	return err
}

// checkKeys checks each key's name, scope and hash.
func checkKeys(ctx context.Context, tx pgx.Tx, r *storage.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT `+keyColumns+`, hash FROM keys ORDER BY created, name COLLATE "C"`)
	if err != nil {
		return err
	}
	var (
		k             storage.Key
		created, last int64
		hash          []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&k.ID, &k.Name, &created, &last, &k.Scope.Inboxes, &k.Scope.ReadOnly, &k.Scope.Metrics, &hash}, func() error {
		if !storage.ValidKeyName(k.Name) {
			r.Problemf("key %s: %q is not a key name", k.ID, k.Name)
		}
		if c, err := storage.CleanScope(k.Scope); err != nil {
			r.Problemf("key %s: its scope: %v", k.ID, err)
		} else if c.ReadOnly != k.Scope.ReadOnly {
			r.Problemf("key %s: a metrics key that may delete", k.ID)
		}
		if len(hash) != len(storage.KeyHash{}) {
			r.Problemf("key %s: a hash of %d bytes", k.ID, len(hash))
		}
		return nil
	})
	return err
}

// checkEvents finds webhook events whose message is missing: they would
// be sent without a sender, subject or body.
func checkEvents(ctx context.Context, tx pgx.Tx, r *storage.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT e.hook, e.email FROM events e
		WHERE NOT EXISTS (SELECT 1 FROM event_messages m WHERE m.id = e.message)
		ORDER BY e.hook COLLATE "C", e.received_at`)
	if err != nil {
		return err
	}
	var (
		hook  string
		email uuid.UUID
	)
	_, err = pgx.ForEachRow(rows, []any{&hook, &email}, func() error {
		r.Problemf("webhook event of email %s for hook %s: its message is missing", email, hook)
		return nil
	})
	return err
}
