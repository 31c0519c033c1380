package postgres

import (
	"context"
	"fmt"

	"burner/storage"
	"burner/storage/internal/record"
)

// Stats counts what the database holds. FileBytes is the database's size
// (pg_database_size).
func (db *DB) Stats(ctx context.Context) (storage.Stats, error) {
	if err := ctx.Err(); err != nil {
		return storage.Stats{}, err
	}
	var (
		st     storage.Stats
		oldest *int64
	)
	err := db.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM emails),
		(SELECT count(DISTINCT inbox) FROM emails),
		(SELECT count(*) FROM keys),
		pg_database_size(current_database()),
		(SELECT min(received_at) FROM emails),
		(SELECT count(*) FROM smtp_sessions)`).Scan(&st.Emails, &st.Inboxes, &st.Keys, &st.FileBytes, &oldest, &st.SMTPSessions)
	if err != nil {
		return storage.Stats{}, fmt.Errorf("stats: %w", db.fail(err))
	}
	if oldest != nil {
		st.Oldest = record.FromMilli(*oldest)
	}
	return st, nil
}

// Inboxes returns every inbox that holds an email, by name.
func (db *DB) Inboxes(ctx context.Context) ([]storage.Inbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT inbox, count(*), max(received_at) FROM emails GROUP BY inbox ORDER BY inbox COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("inboxes: %w", db.fail(err))
	}
	defer rows.Close()
	var out []storage.Inbox
	for rows.Next() {
		var (
			in     storage.Inbox
			newest int64
		)
		if err := rows.Scan(&in.Name, &in.Emails, &newest); err != nil {
			return nil, fmt.Errorf("inboxes: %w", err)
		}
		in.Newest = record.FromMilli(newest)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("inboxes: %w", db.fail(err))
	}
	return out, nil
}
