package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/jackc/pgx/v5/pgconn"
)

// Web UI sessions in the table sessions (migrate.go), so that a login on
// one node is valid on every node (spec §10). A row holds the SHA-256 of
// the token, never the token; its key_id refers to keys with ON DELETE
// CASCADE, so a revoked key's sessions go in the revocation's own
// transaction.

// CreateSession stores a session for keyID until expires
// (storage.Engine); ErrNotFound when there is no key keyID.
func (db *DB) CreateSession(ctx context.Context, hash storage.SessionHash, keyID string, expires time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO sessions (hash, key_id, expires) VALUES ($1, $2, $3)
		ON CONFLICT (hash) DO UPDATE SET key_id = excluded.key_id, expires = excluded.expires`,
		hash[:], keyID, expires.UnixMilli())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation: the key is gone
		err = storage.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create session: %w", db.fail(err))
	}
	return nil
}

// Session returns the session of hash, or ErrNotFound when there is none
// or it expired at now (storage.Engine).
func (db *DB) Session(ctx context.Context, hash storage.SessionHash, now time.Time) (storage.Session, error) {
	if err := ctx.Err(); err != nil {
		return storage.Session{}, err
	}
	var (
		s       storage.Session
		expires int64
	)
	err := db.pool.QueryRow(ctx, `SELECT key_id, expires FROM sessions WHERE hash = $1 AND expires > $2`,
		hash[:], now.UnixMilli()).Scan(&s.KeyID, &expires)
	if err != nil {
		return storage.Session{}, fmt.Errorf("session: %w", db.fail(notFound(err)))
	}
	s.Expires = record.FromMilli(expires)
	return s, nil
}

// TouchSession moves the end of the session of hash to expires
// (storage.Engine). It never brings an end nearer: two nodes touching
// one session at once keep the later end.
func (db *DB) TouchSession(ctx context.Context, hash storage.SessionHash, expires time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `UPDATE sessions SET expires = $2 WHERE hash = $1 AND expires < $2`, hash[:], expires.UnixMilli()); err != nil {
		return fmt.Errorf("touch session: %w", db.fail(err))
	}
	return nil
}

// DeleteSession ends the session of hash (storage.Engine).
func (db *DB) DeleteSession(ctx context.Context, hash storage.SessionHash) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `DELETE FROM sessions WHERE hash = $1`, hash[:]); err != nil {
		return fmt.Errorf("delete session: %w", db.fail(err))
	}
	return nil
}

// DeleteExpiredSessions removes the sessions expired at now and returns
// how many (storage.Engine).
func (db *DB) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM sessions WHERE expires <= $1`, now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", db.fail(err))
	}
	return int(tag.RowsAffected()), nil
}
