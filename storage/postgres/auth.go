package postgres

import (
	"context"
	"fmt"
	"time"

	"burner/storage"
	"burner/storage/internal/commit"
	"burner/storage/internal/record"

	"github.com/jackc/pgx/v5"
)

// Authentication records (spec §12) are in the auth column of bodies
// (since schema version 6), one per message like the attachment index,
// encoded as every engine encodes them (record.EncodeAuth): Deliver
// writes the record pending (or off) with its message, PutAuth replaces
// it with the verdicts, and the record goes with its body. A PutAuth
// tells every node on authChannel, so that a waiter of any node wakes.

// authChannel is the NOTIFY channel of verdicts. A payload is the id of
// the node that stored them, a tab, and the ids of the emails whose
// record changed, one a line; or the node's id, a tab and "*" when they
// would not fit in a payload: every waiter then wakes and reads again.
const authChannel = "burner_auth"

// Auth returns the authentication record of the message of email id, or
// status off for a message stored without one; ErrNotFound when there is
// no email with id.
func (db *DB) Auth(ctx context.Context, id string) (storage.AuthResult, error) {
	uid, err := parseID(ctx, id)
	if err != nil {
		return storage.AuthResult{}, fmt.Errorf("auth %s: %w", id, err)
	}
	var b []byte
	err = db.pool.QueryRow(ctx, `SELECT b.auth FROM emails e JOIN bodies b ON b.id = e.message WHERE e.id = $1`, uid).Scan(&b)
	if err != nil {
		return storage.AuthResult{}, fmt.Errorf("auth %s: %w", id, db.fail(notFound(err)))
	}
	if b == nil {
		return storage.AuthResult{Status: storage.AuthOff}, nil
	}
	r, err := record.DecodeAuth(b)
	if err != nil {
		return storage.AuthResult{}, fmt.Errorf("auth %s: %w", id, err)
	}
	return r, nil
}

// verdictDelay is how long a verdict waits for others to share its
// transaction: a verdict is off the SMTP path and may wait, and a
// transaction per verdict would double the database's commits under load.
const verdictDelay = 10 * time.Millisecond

// PutAuth stores r as the authentication record of the message of each
// email of ids still stored, and wakes the AuthChanged waiters of ids on
// every node. It returns ErrNotFound when none is stored, an error
// wrapping ErrFull past Options.Retention.MaxBytes, and
// storage.ErrUnavailable when the database cannot be reached. The calls
// of verdictDelay share one transaction.
func (db *DB) PutAuth(ctx context.Context, ids []string, r storage.AuthResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v, err := commit.NewVerdict(ids, record.EncodeAuth(r))
	if err == nil {
		err = db.checkRoom(ctx, len(v.Rec), false)
	}
	if err == nil {
		db.verdicts.Add(v)
		err = db.fail(v.Wait())
	}
	if err != nil {
		return fmt.Errorf("put auth %v: %w", ids, err)
	}
	v.Notify(&db.authChanges)
	return nil
}

// flushVerdicts commits the verdicts waiting, in one transaction
// (db.verdicts' Due).
func (db *DB) flushVerdicts() {
	if batch := db.verdicts.Take(); len(batch) > 0 {
		db.commitAuth(batch)
	}
}

// commitAuth writes batch in one transaction, one round trip: an update
// per PutAuth, and one NOTIFY for all. A conflict with a deletion (a
// deadlock) is retried whole.
func (db *DB) commitAuth(batch []*commit.Verdict) {
	defer func() {
		for _, v := range batch {
			v.Done()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	var err error
	for range 3 {
		if err = db.updateAuth(ctx, batch); !retryable(err) {
			break
		}
	}
	for _, v := range batch {
		v.Err = err
	}
}

func (db *DB) updateAuth(ctx context.Context, batch []*commit.Verdict) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		var ids []string
		for _, v := range batch {
			b.Queue(`UPDATE bodies SET auth = $2 WHERE id IN (SELECT message FROM emails WHERE id = ANY($1))`, v.IDs, v.Rec)
			for _, id := range v.IDs {
				ids = append(ids, id.String())
			}
		}
		b.Queue(`SELECT pg_notify($1, $2)`, authChannel, db.payload(ids))
		res := tx.SendBatch(ctx, &b)
		defer res.Close()
		for _, v := range batch {
			tag, err := res.Exec()
			if err != nil {
				return err
			}
			v.Found = tag.RowsAffected() > 0
		}
		if _, err := res.Exec(); err != nil {
			return err
		}
		return res.Close()
	})
}

// AuthChanged returns a channel that is closed once PutAuth has stored a
// record for email id after the call, on this node or any other, or when
// the notifications of other nodes may have been lost.
func (db *DB) AuthChanged(id string) <-chan struct{} { return db.authChanges.ChangedID(id) }
