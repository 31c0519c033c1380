package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"burner/storage"
	"burner/storage/internal/match"
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

// defaultRecentWalk is how many emails one round of RecentInboxes' walk
// reads at most (at least 20 per inbox asked for), and recentRounds how
// many rounds it walks before it groups every email instead: only a
// store whose newest emails crowd into far fewer inboxes than a page
// lists pays for the grouping.
const (
	defaultRecentWalk = 2000
	recentRounds      = 3
)

// RecentInboxes returns the inboxes q keeps, the one with the newest
// email first (then by name), at most q.Limit. It walks the newest emails
// (emails_received) by receivedAt, then name: an inbox is first met at
// its newest email, so the first q.Limit inboxes met that q keeps are the
// answer, in order. A round of the walk reads a few thousand emails; the
// next one skips the inboxes met already, so that one busy inbox does not
// fill every round. After recentRounds rounds (or without a limit) it
// groups every email q's prefixes take. One snapshot answers it all.
func (db *DB) RecentInboxes(ctx context.Context, q storage.InboxQuery) ([]storage.Inbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prefixes := match.InboxPrefixes(q)
	if len(prefixes) == 0 {
		return nil, nil
	}
	// The prefilter: LIKE patterns with the prefixes' own %, _ and \
	// taken literally. The shared rule (q.Matches) decides.
	likes := make([]string, len(prefixes))
	literal := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	for i, p := range prefixes {
		likes[i] = literal.Replace(p) + "%"
	}
	walk := max(defaultRecentWalk, 20*q.Limit)
	if db.recentWalk > 0 {
		walk = db.recentWalk
	}
	var out []storage.Inbox
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		out = nil
		met := []string{} // every inbox met, kept by q or not
		for round := 0; q.Limit > 0 && round < recentRounds; round++ {
			rows, err := tx.Query(ctx, `SELECT inbox, received_at FROM emails WHERE inbox LIKE ANY($1) AND inbox <> ALL($2)
				ORDER BY received_at DESC, inbox COLLATE "C" LIMIT $3`, likes, met, walk)
			if err != nil {
				return err
			}
			seen, read := make(map[string]bool), 0
			for len(out) < q.Limit && rows.Next() {
				var (
					name string
					at   int64
				)
				if err := rows.Scan(&name, &at); err != nil {
					rows.Close()
					return err
				}
				read++
				if seen[name] {
					continue
				}
				seen[name] = true
				met = append(met, name)
				if q.Matches(name) {
					out = append(out, storage.Inbox{Name: name, Newest: record.FromMilli(at)})
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			// Found them all, or read every email there is to read.
			if len(out) == q.Limit || read < walk {
				return countInboxes(ctx, tx, out)
			}
		}
		var err error
		out, err = groupInboxes(ctx, tx, q, likes)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("recent inboxes: %w", db.fail(err))
	}
	return out, nil
}

// groupInboxes returns every inbox q keeps among those of the LIKE
// patterns likes, newest first, at most q.Limit, with their counts.
func groupInboxes(ctx context.Context, tx pgx.Tx, q storage.InboxQuery, likes []string) ([]storage.Inbox, error) {
	rows, err := tx.Query(ctx, `SELECT inbox, count(*), max(received_at) AS newest FROM emails WHERE inbox LIKE ANY($1)
		GROUP BY inbox ORDER BY newest DESC, inbox COLLATE "C"`, likes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storage.Inbox
	for rows.Next() && (q.Limit == 0 || len(out) < q.Limit) {
		var (
			in storage.Inbox
			at int64
		)
		if err := rows.Scan(&in.Name, &in.Emails, &at); err != nil {
			return nil, err
		}
		if q.Matches(in.Name) {
			in.Newest = record.FromMilli(at)
			out = append(out, in)
		}
	}
	return out, rows.Err()
}

// countInboxes sets the count of each of ins.
func countInboxes(ctx context.Context, tx pgx.Tx, ins []storage.Inbox) error {
	if len(ins) == 0 {
		return nil
	}
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = in.Name
	}
	rows, err := tx.Query(ctx, `SELECT inbox, count(*) FROM emails WHERE inbox = ANY($1) GROUP BY inbox`, names)
	if err != nil {
		return err
	}
	counts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.Inbox, error) {
		var in storage.Inbox
		err := r.Scan(&in.Name, &in.Emails)
		return in, err
	})
	if err != nil {
		return err
	}
	byName := make(map[string]int, len(counts))
	for _, c := range counts {
		byName[c.Name] = c.Emails
	}
	for i := range ins {
		ins[i].Emails = byName[ins[i].Name]
	}
	return nil
}
