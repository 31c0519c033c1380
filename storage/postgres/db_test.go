package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"burner/storage/postgres"

	"github.com/jackc/pgx/v5"
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

// testDatabase returns the URL of a new, empty database in the PostgreSQL
// server named by BURNER_TEST_POSTGRES, dropped when t ends. Without it
// the test skips, but under CI=true it fails: CI starts a server.
func testDatabase(t testing.TB) string {
	t.Helper()
	if os.Getenv("BURNER_TEST_POSTGRES") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BURNER_TEST_POSTGRES is not set, and CI=true needs these tests to run (.ci/run starts a PostgreSQL)")
		}
		t.Skip("BURNER_TEST_POSTGRES is not set: no PostgreSQL to test against (set it to a connection URL, e.g. postgres:///postgres?host=/tmp/pg&user=postgres)")
	}
	dbURL, drop, err := createDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return dbURL
}

// createDatabase makes a new database, burner_test_<random>, in the
// server of BURNER_TEST_POSTGRES, and returns its URL and what drops it.
func createDatabase(ctx context.Context) (string, func() error, error) {
	base := os.Getenv("BURNER_TEST_POSTGRES")
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("parse BURNER_TEST_POSTGRES: %w", err)
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connect to BURNER_TEST_POSTGRES: %w", err)
	}
	defer admin.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "burner_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, base)
		if err != nil {
			return fmt.Errorf("connect to drop %s: %w", name, err)
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// openDB opens a new database with opts, closed when t ends.
func openDB(t testing.TB, dbURL string, opts postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), dbURL, opts)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
