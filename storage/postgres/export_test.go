package postgres

// SetRecentWalk makes RecentInboxes of db walk n emails at most before it
// groups them all, for the external tests of that path.
func SetRecentWalk(db *DB, n int) { db.recentWalk = n }
