package smtpd

import (
	"context"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"
)

// The SessionWriter's batches: the final record of a session wins over
// its open one, in a batch or across batches; a session written with its
// delivery drops its open record if that still waits; Shutdown writes
// what waits.
func TestSessionWriter(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, nil)
		w := NewSessionWriter(db, nil)
		t0 := time.Now()
		rec := func(i int, ended bool) storage.SMTPSession {
			return storetest.SMTPSession(storetest.SessionID(i), t0.Add(time.Duration(i)*time.Millisecond), ended, "w@inbox.test")
		}
		w.Open(rec(1, false))
		w.Close(rec(1, true), false)
		w.Close(rec(2, true), false)
		w.Open(rec(2, false)) // late: it must not undo the end
		w.Open(rec(3, false))
		w.Close(rec(3, true), true) // written with its delivery: nothing left to write
		w.Open(rec(4, false))
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		w.Open(rec(5, false))
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{storetest.SessionID(1): true, storetest.SessionID(2): true, storetest.SessionID(4): false, storetest.SessionID(5): false}
		if len(got) != len(want) {
			t.Errorf("the store holds %d records, want %d: %+v", len(got), len(want), got)
		}
		for _, s := range got {
			ended, ok := want[s.ID]
			if !ok || (s.EndedAt != nil) != ended {
				t.Errorf("record %s ended=%v; want it %v (listed: %v)", s.ID, s.EndedAt != nil, ended, ok)
			}
		}
	})
}
