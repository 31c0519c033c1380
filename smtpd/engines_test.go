package smtpd

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"burner/internal/pgtest"
	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/postgres"
)

// The session log (spec §13.1) and the fault rules (spec §13.2) are kept
// by the store: their tests run against each engine.

// opener opens a new, empty store of one engine, on the clock now (nil:
// time.Now), closed when t ends.
type opener func(t *testing.T, now func() time.Time) storage.Engine

// forEachEngine runs test once with each engine: bbolt, and PostgreSQL
// (which skips, saying why, without BURNER_TEST_POSTGRES, and fails
// without it under CI=true).
func forEachEngine(t *testing.T, test func(t *testing.T, open opener)) {
	t.Run("bbolt", func(t *testing.T) {
		test(t, func(t *testing.T, now func() time.Time) storage.Engine {
			db, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), boltdb.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		})
	})
	t.Run("postgres", func(t *testing.T) {
		test(t, func(t *testing.T, now func() time.Time) storage.Engine {
			db, err := postgres.Open(context.Background(), pgtest.Database(t), postgres.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		})
	})
}

// sessionLog is the session log as burner keeps it: a SessionWriter over
// a store, and that store to read it back from.
type sessionLog struct {
	*SessionWriter
	db storage.Engine
}

// newSessionLog returns a SessionWriter over db, shut down when t ends.
func newSessionLog(t *testing.T, db storage.Engine) *sessionLog {
	w := NewSessionWriter(db, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
	})
	return &sessionLog{w, db}
}

// records writes what waits and returns every record, oldest first.
func (l *sessionLog) records(t *testing.T) []storage.SMTPSession {
	t.Helper()
	if err := l.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	got, err := l.db.SMTPSessions(context.Background(), storage.SMTPSessionQuery{Limit: storage.MaxSMTPSessions})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(got)
	return got
}

// waitEnded waits until n records are ended, and returns the ended
// records, oldest first: a session ends when its connection does, after
// the client has its last reply.
func (l *sessionLog) waitEnded(t *testing.T, n int) []storage.SMTPSession {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ended []storage.SMTPSession
		for _, s := range l.records(t) {
			if s.EndedAt != nil {
				ended = append(ended, s)
			}
		}
		if len(ended) >= n {
			return ended
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records ended within 10s, want %d: %+v", len(ended), n, ended)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// arm creates rule in db and returns it with its id.
func arm(t *testing.T, db storage.Engine, rule storage.FaultRule) storage.FaultRule {
	t.Helper()
	r, err := db.CreateFaultRule(context.Background(), rule)
	if err != nil {
		t.Fatalf("CreateFaultRule(%+v): %v", rule, err)
	}
	return r
}

// ruleOf returns the rule of db with id, as it stands.
func ruleOf(t *testing.T, db storage.Engine, id string) storage.FaultRule {
	t.Helper()
	rules, err := db.FaultRules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no fault rule %s", id)
	return storage.FaultRule{}
}
