package postgres

import "context"

// SetRecentWalk makes RecentInboxes of db walk n emails at most before it
// groups them all, for the external tests of that path.
func SetRecentWalk(db *DB, n int) { db.recentWalk = n }

// FaultRCPTs returns how many RCPTs db holds counted for fault rules.
func FaultRCPTs(ctx context.Context, db *DB) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM fault_rcpts`).Scan(&n)
	return n, err
}
