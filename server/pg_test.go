package server

import (
	"testing"

	"burner/internal/pgtest"
	"burner/storage/postgres"
)

// pgDatabase returns the URL of a new, empty database (pgtest.Database).
func pgDatabase(t testing.TB) string {
	t.Helper()
	return pgtest.Database(t)
}

// openPG opens the database at dbURL as one node, closed when t ends.
func openPG(t testing.TB, dbURL string, opts postgres.Options) *postgres.DB {
	t.Helper()
	return pgtest.Open(t, dbURL, opts)
}
