package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The SMTP session log (spec §13.1; storage.Engine) in the table
// smtp_sessions (migrate.go). A delivery writes its session's record in
// its own transaction (queued with its other statements); the rest come
// in batches (WriteSMTPSessions). Either way a record still open never
// replaces an ended one, and a record that exists is updated rather than
// inserted again, so that seq, which holds the cap, is taken once per
// session (but for two nodes' racing inserts, which the ON CONFLICT
// settles).

// smtpLogRows are the columns of the records a statement writes, one
// array each, for unnest.
type smtpLogRows struct {
	started []int64
	ids     []uuid.UUID
	ended   []bool
	inboxes []string // space-separated: an inbox name never holds a space
	records [][]byte
}

// smtpLogRow is one record, encoded, with its columns.
type smtpLogRow struct {
	started int64
	id      uuid.UUID
	ended   bool
	inboxes string
	record  []byte
}

// newSMTPLogRow encodes s as a row to write.
func newSMTPLogRow(s *storage.SMTPSession) (smtpLogRow, error) {
	v, err := record.EncodeSMTPSession(s)
	if err != nil {
		return smtpLogRow{}, err
	}
	id, _ := storage.ParseID(s.ID) // EncodeSMTPSession checked it
	return smtpLogRow{started: s.StartedAt.UnixMilli(), id: id, ended: s.EndedAt != nil, inboxes: strings.Join(s.Inboxes(), " "), record: v}, nil
}

// add adds row to the rows to write.
func (r *smtpLogRows) add(row smtpLogRow) {
	r.started = append(r.started, row.started)
	r.ids = append(r.ids, row.id)
	r.ended = append(r.ended, row.ended)
	r.inboxes = append(r.inboxes, row.inboxes)
	r.records = append(r.records, row.record)
}

func (r *smtpLogRows) args() []any { return []any{r.started, r.ids, r.ended, r.inboxes, r.records} }

// writeSMTPLogSQL writes the rows of smtpLogRows.args: an update of the
// sessions that have a row, where the new record is ended or the old one
// is not; an insert of the others. A statement sees the rows as they were
// before it, so no row is both.
const writeSMTPLogSQL = `WITH u AS (
		SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::boolean[], $4::text[], $5::bytea[]) AS u(started_at, id, ended, inboxes, record)),
	upd AS (UPDATE smtp_sessions t SET ended = u.ended, inboxes = string_to_array(u.inboxes, ' '), record = u.record
		FROM u WHERE t.started_at = u.started_at AND t.id = u.id AND (u.ended OR NOT t.ended))
	INSERT INTO smtp_sessions (started_at, id, ended, inboxes, record)
	SELECT started_at, id, ended, string_to_array(inboxes, ' '), record FROM u
	WHERE NOT EXISTS (SELECT 1 FROM smtp_sessions t WHERE t.started_at = u.started_at AND t.id = u.id)
	ON CONFLICT (started_at, id) DO UPDATE SET ended = excluded.ended, inboxes = excluded.inboxes, record = excluded.record
	WHERE excluded.ended OR NOT smtp_sessions.ended`

// deliverSMTPLogSQL writes the records of delivered sessions, in their
// deliveries' transaction: an insert, or, for a session whose open record
// a batch wrote already (rare: most sessions end before the writer's next
// batch), an update. Such an update spends a seq, which only makes the
// cap hold with a row fewer.
const deliverSMTPLogSQL = `INSERT INTO smtp_sessions (started_at, id, ended, inboxes, record)
	SELECT started_at, id, ended, string_to_array(inboxes, ' '), record
	FROM unnest($1::bigint[], $2::uuid[], $3::boolean[], $4::text[], $5::bytea[]) AS u(started_at, id, ended, inboxes, record)
	ON CONFLICT (started_at, id) DO UPDATE SET ended = excluded.ended, inboxes = excluded.inboxes, record = excluded.record`

// trimSMTPLogSQL deletes the rows made before the last $1, at most $2
// of them, the oldest first: then at most $1 rows are left, or $2 fewer
// rows than there were.
const trimSMTPLogSQL = `DELETE FROM smtp_sessions WHERE seq IN (
	SELECT seq FROM smtp_sessions WHERE seq <= (SELECT max(seq) FROM smtp_sessions) - $1 ORDER BY seq LIMIT $2)`

// trimAtDelivery bounds the rows a delivery batch deletes to hold the
// cap: after a cap was lowered, the sweeper deletes the many.
const trimAtDelivery = 64

// WriteSMTPSessions writes recs in one transaction (storage.Engine).
func (db *DB) WriteSMTPSessions(ctx context.Context, recs []storage.SMTPSession) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// One row per session, by the table's key (the start in
	// milliseconds, the id): of two records of one, the ended one, else
	// the later. Two rows of one key would fail the statement.
	type rowKey struct {
		started int64
		id      string
	}
	byKey := make(map[rowKey]int, len(recs))
	var keep []int
	for i := range recs {
		k := rowKey{recs[i].StartedAt.UnixMilli(), recs[i].ID}
		j, ok := byKey[k]
		switch {
		case !ok:
			byKey[k] = len(keep)
			keep = append(keep, i)
		case recs[i].EndedAt != nil || recs[keep[j]].EndedAt == nil:
			keep[j] = i
		}
	}
	// In the order of the key, as every writer locks rows, so that two
	// batches do not wait for each other in a cycle.
	slices.SortFunc(keep, func(a, b int) int {
		if c := cmp.Compare(recs[a].StartedAt.UnixMilli(), recs[b].StartedAt.UnixMilli()); c != 0 {
			return c
		}
		return strings.Compare(recs[a].ID, recs[b].ID)
	})
	var rows smtpLogRows
	for _, i := range keep {
		row, err := newSMTPLogRow(&recs[i])
		if err != nil {
			return fmt.Errorf("write smtp sessions: %w", err)
		}
		rows.add(row)
	}
	var err error
	for range 3 {
		err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			var b pgx.Batch
			b.Queue(writeSMTPLogSQL, rows.args()...)
			if db.retention.MaxSessions > 0 {
				b.Queue(trimSMTPLogSQL, db.retention.MaxSessions, len(keep)+trimAtDelivery)
			}
			return tx.SendBatch(ctx, &b).Close()
		})
		if !retryable(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write smtp sessions: %w", db.fail(err))
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
	since := int64(-1)
	if !q.Since.IsZero() {
		since = record.FloorMilli(q.Since) // startedAt is whole milliseconds
	}
	sql := `SELECT record FROM smtp_sessions WHERE started_at > $1 ORDER BY started_at DESC, id DESC LIMIT $2`
	args := []any{since, limit}
	if q.Inbox != "" {
		sql = `SELECT record FROM smtp_sessions WHERE inboxes @> ARRAY[$3::text] AND started_at > $1 ORDER BY started_at DESC, id DESC LIMIT $2`
		args = append(args, q.Inbox)
	}
	rows, err := db.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("smtp sessions: %w", db.fail(err))
	}
	values, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("smtp sessions: %w", db.fail(err))
	}
	out := make([]storage.SMTPSession, len(values))
	for i, v := range values {
		if out[i], err = record.DecodeSMTPSession(v); err != nil {
			return nil, fmt.Errorf("smtp sessions: %w", err)
		}
	}
	return out, nil
}

// sweepSMTPLog deletes the rows beyond Retention.MaxSessions and those
// older than Retention.SessionsMaxAge, smallTx at a time.
func (db *DB) sweepSMTPLog(ctx context.Context) error {
	for db.retention.MaxSessions > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		tag, err := db.pool.Exec(ctx, trimSMTPLogSQL, db.retention.MaxSessions, smallTx)
		if err != nil {
			return err
		}
		if tag.RowsAffected() < smallTx {
			break
		}
	}
	if db.retention.SessionsMaxAge > 0 {
		cutoff := record.CeilMilli(db.now().Add(-db.retention.SessionsMaxAge)) // started_at < cutoff
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			tag, err := db.pool.Exec(ctx, `DELETE FROM smtp_sessions WHERE (started_at, id) IN (
				SELECT started_at, id FROM smtp_sessions WHERE started_at < $1 ORDER BY started_at LIMIT $2)`, cutoff, smallTx)
			if err != nil {
				return err
			}
			if tag.RowsAffected() < smallTx {
				break
			}
		}
	}
	return nil
}

// checkSMTPLog checks that every record of the session log decodes, under
// its start and id, and that its row names the inboxes it names.
func checkSMTPLog(ctx context.Context, tx pgx.Tx, r *storage.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT started_at, id, ended, inboxes, record FROM smtp_sessions`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			started int64
			id      uuid.UUID
			ended   bool
			inboxes []string
			v       []byte
		)
		if err := rows.Scan(&started, &id, &ended, &inboxes, &v); err != nil {
			return err
		}
		s, err := record.DecodeSMTPSession(v)
		switch {
		case err != nil:
			r.Problemf("smtp session %s: %v", id, err)
		case s.ID != id.String() || s.StartedAt.UnixMilli() != started || (s.EndedAt != nil) != ended:
			r.Problemf("smtp session %s: its row says another id, start or end than its record", id)
		case !slices.Equal(inboxes, s.Inboxes()) && !(len(inboxes) == 0 && len(s.Inboxes()) == 0):
			r.Problemf("smtp session %s: its row names inboxes %q, its record %q", id, inboxes, s.Inboxes())
		}
	}
	return rows.Err()
}
