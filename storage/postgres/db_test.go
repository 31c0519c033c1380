package postgres_test

import (
	"fmt"
	"os"
	"testing"

	"burner/internal/pgtest"
	"burner/storage/postgres"
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, drop := range filled.drops {
		if err := drop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// testDatabase returns the URL of a new, empty database (pgtest.Database).
func testDatabase(t testing.TB) string {
	t.Helper()
	return pgtest.Database(t)
}

// openDB opens a new database with opts, closed when t ends.
func openDB(t testing.TB, dbURL string, opts postgres.Options) *postgres.DB {
	t.Helper()
	return pgtest.Open(t, dbURL, opts)
}
