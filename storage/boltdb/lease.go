package boltdb

import (
	"context"
	"fmt"
	"time"

	"burner/storage"

	"github.com/google/uuid"
)

// RenewLease extends the lease of e to until while this DB holds it
// (storage.Outbox): leases live in memory, as the outbox's type says.
func (db *DB) RenewLease(ctx context.Context, e storage.Event, until time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := uuid.Parse(e.Email.ID); err != nil {
		return fmt.Errorf("renew lease of event %s: %w", e.Email.ID, storage.ErrNotFound)
	}
	ident := string(eventIdent(e))
	ob := &db.outbox
	ob.mu.Lock()
	defer ob.mu.Unlock()
	// A settled event has lost its lease. One whose lease has ended and
	// that was claimed again is leased to this process still, the only
	// one that claims from the file.
	if _, ok := ob.leases[ident]; ok {
		ob.leases[ident] = until
	}
	return nil
}

// ReclaimLeases ends no lease and returns 0 (storage.Outbox): one process
// at a time holds the file, and leases live in its memory, so those of an
// earlier run ended with it.
func (db *DB) ReclaimLeases(ctx context.Context, node string) (int, error) {
	return 0, ctx.Err()
}
