package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"burner/storage/postgres"

	"github.com/jackc/pgx/v5"
)

// pgDatabase returns the URL of a new, empty database in the PostgreSQL
// server named by BURNER_TEST_POSTGRES, dropped when t ends. Without it
// the test skips, but under CI=true it fails: CI starts a server.
func pgDatabase(t testing.TB) string {
	t.Helper()
	base := os.Getenv("BURNER_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BURNER_TEST_POSTGRES is not set, and CI=true needs these tests to run (.ci/run starts a PostgreSQL)")
		}
		t.Skip("BURNER_TEST_POSTGRES is not set: no PostgreSQL to test against (set it to a connection URL, e.g. postgres:///postgres?host=/tmp/pg&user=postgres)")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse BURNER_TEST_POSTGRES: %v", err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to BURNER_TEST_POSTGRES: %v", err)
	}
	defer admin.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "burner_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("connect to drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// openPG opens the database at dbURL as one node, closed when t ends.
func openPG(t testing.TB, dbURL string, opts postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), dbURL, opts)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
