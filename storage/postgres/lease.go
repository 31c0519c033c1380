package postgres

import (
	"context"
	"fmt"
	"time"

	"burner/storage"
)

// RenewLease extends the lease of e to until while this DB holds it
// (storage.Outbox): its row names this DB as the lease's owner, which a
// claim by another node, once the lease had ended, would have changed.
func (db *DB) RenewLease(ctx context.Context, e storage.Event, until time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id, err := eventID(e)
	if err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	_, err = db.pool.Exec(ctx, `UPDATE events SET lease_until = $3 WHERE hook = $1 AND email = $2 AND lease_owner = $4`,
		e.Hook, id, until.UnixMilli(), db.node)
	if err != nil {
		return fmt.Errorf("renew lease of event %s of hook %s: %w", e.Email.ID, e.Hook, db.fail(err))
	}
	return nil
}

// ReclaimLeases ends the leases that node holds through another opening of
// the database (storage.Outbox). A node's name is the same across its
// runs (Claim.Node), the owner of a lease is the opening that took it
// (DB.node, new at each Open): a lease of the name with another owner is
// what an earlier run of this node left behind.
func (db *DB) ReclaimLeases(ctx context.Context, node string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE events SET lease_until = 0, lease_node = NULL, lease_owner = NULL
		WHERE lease_node = $1 AND lease_owner <> $2 AND lease_until > 0`, node, db.node)
	if err != nil {
		return 0, fmt.Errorf("reclaim the leases of node %s: %w", node, db.fail(err))
	}
	return int(tag.RowsAffected()), nil
}
