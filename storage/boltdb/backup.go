package boltdb

import (
	"context"
	"fmt"
	"io"

	"burner/storage"

	bolt "go.etcd.io/bbolt"
)

// snapshot is a consistent view of the whole data file, frozen when it was
// taken, while the DB goes on taking mail. Its WriteTo writes a copy of the
// file that Open reads like the original: a hot backup. It holds a read
// transaction, so Close it soon: until then a write that must grow the
// file's memory map (rare past the first megabytes: the map doubles) waits
// for it, and so does Close of the DB.
type snapshot struct {
	tx *bolt.Tx
}

// Snapshot takes a snapshot of the file.
func (db *DB) Snapshot(ctx context.Context) (storage.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tx, err := db.bolt.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &snapshot{tx: tx}, nil
}

// Size returns how many bytes WriteTo writes.
func (s *snapshot) Size() int64 { return s.tx.Size() }

// WriteTo writes the snapshot, a complete data file of Size bytes, to w.
func (s *snapshot) WriteTo(w io.Writer) (int64, error) {
	n, err := s.tx.WriteTo(w)
	if err != nil {
		return n, fmt.Errorf("snapshot: %w", err)
	}
	return n, nil
}

// Close releases the snapshot. It is safe to call more than once.
func (s *snapshot) Close() error {
	if s.tx.DB() == nil {
		return nil // already closed
	}
	return s.tx.Rollback()
}

// Backup writes a consistent copy of the data file to w, as it is at the
// call, and returns its size. Mail goes on arriving meanwhile.
func (db *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	s, err := db.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return s.WriteTo(w)
}
