// Package pgtest gives tests and benchmarks of several packages a new,
// empty PostgreSQL database of their own, in the server named by
// BURNER_TEST_POSTGRES (a connection URL; .ci/run starts one).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"burner/storage/postgres"
)

// Database returns the URL of a new, empty database, dropped when tb ends
// (after the cleanups registered later, such as closing the stores opened
// on it). Without BURNER_TEST_POSTGRES tb skips, saying why; under
// CI=true, where CI starts a server, it fails instead.
func Database(tb testing.TB) string {
	tb.Helper()
	if os.Getenv("BURNER_TEST_POSTGRES") == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("BURNER_TEST_POSTGRES is not set, and CI=true needs these tests to run (.ci/run starts a PostgreSQL)")
		}
		tb.Skip("BURNER_TEST_POSTGRES is not set: no PostgreSQL to test against (set it to a connection URL, e.g. postgres:///postgres?host=/tmp/pg&user=postgres)")
	}
	dbURL, drop, err := Create(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := drop(); err != nil {
			tb.Error(err)
		}
	})
	return dbURL
}

// Create makes a new database, burner_test_<random>, in the server of
// BURNER_TEST_POSTGRES, and returns its URL and what drops it.
func Create(ctx context.Context) (string, func() error, error) {
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

// Open opens burner's store in the database at dbURL with opts, closed
// when tb ends.
func Open(tb testing.TB, dbURL string, opts postgres.Options) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), dbURL, opts)
	if err != nil {
		tb.Fatalf("postgres.Open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
