package postgres

import (
	"context"
	"fmt"

	"burner/storage/internal/record"
)

// Sweep applies retention: it deletes emails older than
// Options.Retention.MaxAge and, in each inbox, the oldest beyond
// Options.Retention.MaxPerInbox, in small transactions, and returns how many it
// deleted. One node sweeps at a time (an advisory lock): on the others Sweep
// returns 0 at once. It also deletes the messages that two concurrent deletions
// left without an email, and the lock rows of empty inboxes, keeps the
// SMTP session log within its age and cap, and forgets the RCPTs counted
// for fault rules more than a minute ago. It stops early when ctx is done.
func (db *DB) Sweep(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n, err := db.sweep(ctx)
	if err != nil {
		return n, fmt.Errorf("sweep: %w", db.fail(err))
	}
	return n, nil
}

func (db *DB) sweep(ctx context.Context) (int, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(lockSweep)).Scan(&locked); err != nil {
		return 0, err
	}
	if !locked {
		return 0, nil
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(lockSweep))
	}()
	if err := db.sweepSMTPLog(ctx); err != nil {
		return 0, fmt.Errorf("the smtp session log: %w", err)
	}
	if err := db.forgetRCPTs(ctx); err != nil {
		return 0, fmt.Errorf("the RCPTs fault rules count: %w", err)
	}
	total := 0
	if db.retention.MaxAge > 0 {
		cutoff := record.CeilMilli(db.now().Add(-db.retention.MaxAge)) // received_at < cutoff, to the nanosecond
		for {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			n, err := db.deleteSome(ctx, `DELETE FROM emails WHERE seq IN (
				SELECT seq FROM emails WHERE received_at < $1 ORDER BY received_at, seq LIMIT $2 FOR UPDATE)
				RETURNING message`, cutoff, smallTx)
			total += n
			if err != nil {
				return total, err
			}
			if n < smallTx {
				break
			}
		}
	}
	if db.retention.MaxPerInbox > 0 {
		rows, err := db.pool.Query(ctx, `SELECT inbox, count(*) FROM emails GROUP BY inbox HAVING count(*) > $1`, db.retention.MaxPerInbox)
		if err != nil {
			return total, err
		}
		type over struct {
			inbox string
			n     int
		}
		var overs []over
		for rows.Next() {
			var o over
			if err := rows.Scan(&o.inbox, &o.n); err != nil {
				rows.Close()
				return total, err
			}
			overs = append(overs, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return total, err
		}
		for _, o := range overs {
			for left := o.n - db.retention.MaxPerInbox; left > 0; {
				if err := ctx.Err(); err != nil {
					return total, err
				}
				// Under the inbox's lock, as a delivery trims: the count
				// read above may be stale by now.
				n, err := db.trimLocked(ctx, o.inbox, min(left, smallTx))
				total += n
				if err != nil {
					return total, err
				}
				if n == 0 {
					break
				}
				left -= n
			}
		}
	}
	// Messages whose last two emails were deleted by two transactions at
	// once, each seeing the other's email still there.
	if _, err := db.pool.Exec(ctx, `WITH gone AS (
		DELETE FROM messages m WHERE NOT EXISTS (SELECT 1 FROM emails e WHERE e.message = m.id) RETURNING id)
		DELETE FROM bodies WHERE id IN (SELECT id FROM gone)`); err != nil {
		return total, err
	}
	// The lock rows of inboxes that hold nothing: disposable inboxes come
	// and go. A delivery holding one makes this wait, and one that comes
	// after inserts it again.
	_, err = db.pool.Exec(ctx, `DELETE FROM inboxes i WHERE NOT EXISTS (SELECT 1 FROM emails e WHERE e.inbox = i.name)`)
	return total, err
}

// trimLocked deletes up to most of the oldest emails of inbox beyond the
// cap, under the inbox's row lock, and returns how many it deleted.
func (db *DB) trimLocked(ctx context.Context, inbox string, most int) (int, error) {
	return db.deleteSome(ctx, `WITH locked AS (SELECT name FROM inboxes WHERE name = $1 FOR UPDATE)
		DELETE FROM emails WHERE seq IN (
			SELECT seq FROM emails WHERE inbox = (SELECT name FROM locked)
			ORDER BY received_at, seq
			LIMIT least($2, greatest(0, (SELECT count(*) FROM emails WHERE inbox = $1) - $3)) FOR UPDATE)
		RETURNING message`, inbox, most, db.retention.MaxPerInbox)
}
