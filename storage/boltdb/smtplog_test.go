package boltdb

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"

	bolt "go.etcd.io/bbolt"
)

// The index by inbox lives in memory: Open builds it from the records,
// so that a listing by inbox finds the records of an earlier run.
func TestSMTPIndexAfterReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	recs := []storage.SMTPSession{
		storetest.SMTPSession(storetest.SessionID(1), t0, true, "alice@inbox.test", "bob@inbox.test"),
		storetest.SMTPSession(storetest.SessionID(2), t0.Add(time.Second), true, "bob@inbox.test"),
	}
	if err := db.WriteSMTPSessions(ctx, recs); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for inbox, want := range map[string]int{"alice": 1, "bob": 2, "carol": 0} {
		got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{Inbox: inbox})
		if err != nil || len(got) != want {
			t.Errorf("after a reopen, SMTPSessions(%s) = %d records, %v; want %d", inbox, len(got), err, want)
		}
	}
}

// A key the index holds for a record that is gone (two commits' updates
// of the index came in the other order) is skipped, and dropped.
func TestSMTPIndexStaleKey(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, Options{})
	s := storetest.SMTPSession(storetest.SessionID(1), time.Now(), true, "alice@inbox.test")
	if err := db.WriteSMTPSessions(ctx, []storage.SMTPSession{s}); err != nil {
		t.Fatal(err)
	}
	gone, err := newSMTPLogEntry(new(storetest.SMTPSession(storetest.SessionID(2), time.Now().Add(time.Second), true, "alice@inbox.test")))
	if err != nil {
		t.Fatal(err)
	}
	db.smtpIndex.add(gone.key, gone.inboxes)
	got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{Inbox: "alice"})
	if err != nil || len(got) != 1 || got[0].ID != s.ID {
		t.Fatalf("SMTPSessions(alice) with a stale key = %+v, %v; want the one record", got, err)
	}
	if keys := db.smtpIndex.newest("alice", -1, 0, 10); len(keys) != 1 {
		t.Errorf("after the listing the index holds %d keys for alice, want 1", len(keys))
	}
}

// The session log's sweep commits only a step that has work: records
// past their age under the cap cost one commit, and a sweep with nothing
// to do none.
func TestSweepSMTPLogCommits(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := openDB(t, Options{Now: clock.Now, Retention: storage.Retention{MaxSessions: 100, SessionsMaxAge: time.Hour}})
	recs := []storage.SMTPSession{
		storetest.SMTPSession(storetest.SessionID(1), clock.Now(), true, "alice@inbox.test"),
		storetest.SMTPSession(storetest.SessionID(2), clock.Now(), true, "bob@inbox.test"),
	}
	if err := db.WriteSMTPSessions(ctx, recs); err != nil {
		t.Fatal(err)
	}
	txid := func() int {
		var id int
		db.bolt.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
		return id
	}
	for _, tc := range []struct {
		advance time.Duration
		commits int
		left    int
	}{{0, 0, 2}, {2 * time.Hour, 1, 0}, {0, 0, 0}} {
		clock.Advance(tc.advance)
		before := txid()
		if err := db.sweepSMTPLog(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{})
		if n := txid() - before; n != tc.commits || err != nil || len(got) != tc.left {
			t.Errorf("sweep after %v: %d commits, %d records left (%v); want %d commits, %d left", tc.advance, n, len(got), err, tc.commits, tc.left)
		}
	}
}
