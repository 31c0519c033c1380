package boltdb

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"
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
