package postgres

import (
	"context"
	"errors"
	"fmt"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Email returns the email with id, or ErrNotFound (also for an id that is
// not in the canonical form).
func (db *DB) Email(ctx context.Context, id string) (storage.Email, error) {
	e, err := db.email(ctx, id)
	if err != nil {
		return storage.Email{}, fmt.Errorf("email %s: %w", id, db.fail(err))
	}
	return e, nil
}

func (db *DB) email(ctx context.Context, id string) (storage.Email, error) {
	uid, err := parseID(ctx, id)
	if err != nil {
		return storage.Email{}, err
	}
	var (
		e                              storage.Email
		to, from, fromName, subj, body []byte
		at                             int64
	)
	err = db.pool.QueryRow(ctx, `SELECT e.to_addr, e.received_at, e.read, m.from_addr, m.from_name, m.subject, b.body
		FROM emails e JOIN messages m ON m.id = e.message JOIN bodies b ON b.id = e.message WHERE e.id = $1`, uid).
		Scan(&to, &at, &e.Read, &from, &fromName, &subj, &body)
	if err != nil {
		return storage.Email{}, notFound(err)
	}
	e.ID, e.To, e.From, e.FromName = uid.String(), string(to), string(from), string(fromName)
	e.Subject, e.Body, e.ReceivedAt = stringPtr(subj), stringPtr(body), record.FromMilli(at)
	return e, nil
}

// parseID returns the UUID of id, or ErrNotFound; ctx.Err() first.
func parseID(ctx context.Context, id string) (uuid.UUID, error) {
	if err := ctx.Err(); err != nil {
		return uuid.UUID{}, err
	}
	return storage.ParseID(id)
}

// notFound maps pgx's ErrNoRows to storage.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.ErrNotFound
	}
	return err
}

// Raw returns the message of email id as it was received, or ErrNotFound.
func (db *DB) Raw(ctx context.Context, id string) ([]byte, error) {
	raw, err := db.raw(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("raw %s: %w", id, db.fail(err))
	}
	return raw, nil
}

func (db *DB) raw(ctx context.Context, id string) ([]byte, error) {
	uid, err := parseID(ctx, id)
	if err != nil {
		return nil, err
	}
	var z []byte
	err = db.pool.QueryRow(ctx, `SELECT b.raw FROM emails e JOIN bodies b ON b.id = e.message WHERE e.id = $1`, uid).Scan(&z)
	if err != nil {
		return nil, notFound(err)
	}
	raw, err := db.zdec.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	if raw == nil {
		raw = []byte{}
	}
	return raw, nil
}

// Content returns the plain text and links of email id, or ErrNotFound.
func (db *DB) Content(ctx context.Context, id string) (storage.Content, error) {
	uid, err := parseID(ctx, id)
	if err != nil {
		return storage.Content{}, fmt.Errorf("content %s: %w", id, err)
	}
	var plain, links []byte
	err = db.pool.QueryRow(ctx, `SELECT b.plain, b.links FROM emails e JOIN bodies b ON b.id = e.message WHERE e.id = $1`, uid).Scan(&plain, &links)
	if err != nil {
		return storage.Content{}, fmt.Errorf("content %s: %w", id, db.fail(notFound(err)))
	}
	c := storage.Content{Plain: string(plain)}
	if c.Links, err = record.DecodeStrings(links); err != nil {
		return storage.Content{}, fmt.Errorf("content %s: %w", id, err)
	}
	return c, nil
}

// MarkRead sets the read flag of email id, or returns ErrNotFound.
func (db *DB) MarkRead(ctx context.Context, id string) error {
	uid, err := parseID(ctx, id)
	if err == nil {
		var tag interface{ RowsAffected() int64 }
		tag, err = db.pool.Exec(ctx, `UPDATE emails SET read = true WHERE id = $1`, uid)
		if err == nil && tag.RowsAffected() == 0 {
			err = storage.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("mark read %s: %w", id, db.fail(err))
	}
	return nil
}

// Delete removes email id, or returns ErrNotFound. Other recipients'
// copies of the same message are not touched.
func (db *DB) Delete(ctx context.Context, id string) error {
	uid, err := parseID(ctx, id)
	if err == nil {
		err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			var msg uuid.UUID
			if err := tx.QueryRow(ctx, `DELETE FROM emails WHERE id = $1 RETURNING message`, uid).Scan(&msg); err != nil {
				return notFound(err)
			}
			return deleteOrphans(ctx, tx, []uuid.UUID{msg})
		})
	}
	if err != nil {
		return fmt.Errorf("delete email %s: %w", id, db.fail(err))
	}
	return nil
}

// smallTx bounds the deletions of one transaction of a long job (Clear,
// Sweep), so that it holds few locks for little time.
const smallTx = 256

// Clear deletes every email of the inbox localPart and returns how many it
// deleted. It works in small transactions and stops early when ctx is done.
func (db *DB) Clear(ctx context.Context, localPart string) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := db.deleteSome(ctx, trimSQL, storage.InboxName(localPart), smallTx)
		total += n
		if err != nil {
			return total, fmt.Errorf("clear %s: %w", localPart, db.fail(err))
		}
		if n < smallTx {
			return total, nil
		}
	}
}

// deleteSome runs sql, a DELETE of emails returning their messages, with
// args, and deletes the messages left without an email, in one
// transaction. It returns how many emails it deleted.
func (db *DB) deleteSome(ctx context.Context, sql string, args ...any) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		msgs, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return err
		}
		n = len(msgs)
		if n == 0 {
			return nil
		}
		return deleteOrphans(ctx, tx, msgs)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Attachments returns the stored attachment index of the message of email
// id, and false when none is stored yet; ErrNotFound when there is no
// email with id.
func (db *DB) Attachments(ctx context.Context, id string) (storage.Attachments, bool, error) {
	uid, err := parseID(ctx, id)
	if err != nil {
		return storage.Attachments{}, false, fmt.Errorf("attachments %s: %w", id, err)
	}
	var b []byte
	err = db.pool.QueryRow(ctx, `SELECT b.attachments FROM emails e JOIN bodies b ON b.id = e.message WHERE e.id = $1`, uid).Scan(&b)
	if err != nil {
		return storage.Attachments{}, false, fmt.Errorf("attachments %s: %w", id, db.fail(notFound(err)))
	}
	if b == nil {
		return storage.Attachments{}, false, nil
	}
	a, ok, err := record.DecodeAttachments(b)
	if err != nil {
		return storage.Attachments{}, false, fmt.Errorf("attachments %s: %w", id, err)
	}
	return a, ok, nil
}

// PutAttachments stores a as the attachment index of the message of email
// id, shared by every email of that message; ErrNotFound when there is no
// email with id, and an error wrapping ErrFull past Options.Retention.MaxBytes.
func (db *DB) PutAttachments(ctx context.Context, id string, a storage.Attachments) error {
	uid, err := parseID(ctx, id)
	b := record.EncodeAttachments(a)
	if err == nil {
		err = db.checkRoom(ctx, len(b), false)
	}
	if err == nil {
		var tag interface{ RowsAffected() int64 }
		tag, err = db.pool.Exec(ctx, `UPDATE bodies SET attachments = $2 WHERE id = (SELECT message FROM emails WHERE id = $1)`, uid, b)
		if err == nil && tag.RowsAffected() == 0 {
			err = storage.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("put attachments %s: %w", id, db.fail(err))
	}
	return nil
}
