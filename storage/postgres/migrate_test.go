package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"burner/storage/postgres"

	"github.com/jackc/pgx/v5"
)

// TestOpenConcurrently: nodes that start at once on a new database create
// the schema once, under the advisory lock, and all open.
func TestOpenConcurrently(t *testing.T) {
	dbURL := testDatabase(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := postgres.Open(context.Background(), dbURL, postgres.Options{})
			if err != nil {
				t.Errorf("postgres.Open at once with others: %v", err)
				return
			}
			db.Close()
		}()
	}
	wg.Wait()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM burner_schema`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("burner_schema holds %d rows, %v; want 1", rows, err)
	}
}

// TestRefuseNewerSchema: a node refuses a database of a newer burner.
func TestRefuseNewerSchema(t *testing.T) {
	dbURL := testDatabase(t)
	db := openDB(t, dbURL, postgres.Options{})
	db.Close()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE burner_schema SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	if db, err := postgres.Open(context.Background(), dbURL, postgres.Options{}); !errors.Is(err, postgres.ErrSchemaNew) {
		if err == nil {
			db.Close()
		}
		t.Errorf("postgres.Open of a newer schema: %v, want ErrSchemaNew", err)
	}
}
