package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/internal/record"
)

// SMTPSession returns the record of a session that started at start,
// with id (a UUID) and a RCPT for each of to, each accepted (250) unless
// it is outside inbox.test (550); ended, rejected or open as said.
func SMTPSession(id string, start time.Time, ended bool, to ...string) storage.SMTPSession {
	s := storage.SMTPSession{ID: id, StartedAt: record.Milli(start), Node: "node-a",
		Client: storage.SMTPClient{IP: "127.0.0.1", HELO: "client.test"}, MailFrom: "app@sender.test"}
	s.Transcript = append(s.Transcript, storage.TranscriptLine{C: "EHLO client.test", S: "250-localhost\n250 PIPELINING"},
		storage.TranscriptLine{C: "MAIL FROM:<app@sender.test>", S: "250 2.1.0 OK"})
	for _, addr := range to {
		r := storage.SMTPRecipient{Address: addr, Reply: ptr("250 2.1.5 OK")}
		if local, domain, _ := cut(addr); domain == "inbox.test" {
			r.Inbox = ptr(storage.InboxName(local))
		} else {
			r.Reply = ptr("550 5.1.1 Relay access denied: not an inbox domain here")
			s.Outcome = storage.SMTPRejected
		}
		s.Recipients = append(s.Recipients, r)
		s.Transcript = append(s.Transcript, storage.TranscriptLine{C: "RCPT TO:<" + addr + ">", S: *r.Reply})
	}
	if ended {
		end := s.StartedAt.Add(5 * time.Millisecond)
		s.EndedAt = &end
		if s.Outcome == "" {
			s.Outcome = storage.SMTPAborted
		}
		s.Transcript = append(s.Transcript, storage.TranscriptLine{C: "QUIT", S: "221 2.0.0 localhost closing connection"})
	} else {
		s.Outcome = ""
	}
	return s
}

func cut(addr string) (local, domain string, ok bool) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == '@' {
			return addr[:i], addr[i+1:], true
		}
	}
	return addr, "", false
}

// SessionID returns the i-th of a run of session ids (UUIDs).
func SessionID(i int) string { return fmt.Sprintf("0195f3b0-0000-7000-8000-%012x", i) }

// listSessions lists q, failing t on an error, and returns the ids.
func listSessions(t *testing.T, db storage.Engine, q storage.SMTPSessionQuery) []string {
	t.Helper()
	got, err := db.SMTPSessions(context.Background(), q)
	if err != nil {
		t.Fatalf("SMTPSessions(%+v): %v", q, err)
	}
	ids := []string{}
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	return ids
}

func writeSessions(t *testing.T, db storage.Engine, recs ...storage.SMTPSession) {
	t.Helper()
	if err := db.WriteSMTPSessions(context.Background(), recs); err != nil {
		t.Fatalf("WriteSMTPSessions: %v", err)
	}
}

// testSMTPLog: records written in batches, replaced by their final
// record but never by an open one; listed newest first, all of them or
// by an inbox their RCPTs named (accepted or refused), after since, at
// most limit.
func testSMTPLog(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := SMTPSession(SessionID(1), t0, false, "alice@inbox.test")
	writeSessions(t, db, a)
	got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{Inbox: "alice"})
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], a) {
		t.Fatalf("SMTPSessions(alice) = %+v, %v; want the open record %+v", got, err, a)
	}
	// The final record replaces the open one, and names one more inbox.
	aEnd := SMTPSession(SessionID(1), t0, true, "alice@inbox.test", "Bob@inbox.test")
	writeSessions(t, db, aEnd)
	// An open record that comes late does not replace it.
	writeSessions(t, db, a)
	if got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{Inbox: "bob"}); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], aEnd) {
		t.Errorf("SMTPSessions(bob) after the final record and a late open one = %+v, %v; want the final %+v", got, err, aEnd)
	}
	// Of two records of one session in one batch, the ended one.
	writeSessions(t, db, SMTPSession(SessionID(2), t0.Add(time.Second), true, "carol@inbox.test"),
		SMTPSession(SessionID(2), t0.Add(time.Second), false, "carol@inbox.test"))
	if got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{Inbox: "carol"}); err != nil || len(got) != 1 || got[0].EndedAt == nil {
		t.Errorf("SMTPSessions(carol) after an ended and an open record in one batch = %+v, %v; want the ended one", got, err)
	}
	// A refused RCPT names no inbox when outside the inbox domains: listed
	// only among all sessions; one refused for an inbox is listed there.
	refused := SMTPSession(SessionID(3), t0.Add(2*time.Second), true, "x@elsewhere.test")
	refusedInbox := SMTPSession(SessionID(4), t0.Add(2*time.Second), true, "dave@inbox.test")
	refusedInbox.Recipients[0].Reply, refusedInbox.Outcome = ptr("550 5.1.1 No such mailbox here"), storage.SMTPRejected
	writeSessions(t, db, refused, refusedInbox)
	for _, tc := range []struct {
		q    storage.SMTPSessionQuery
		want []string
	}{
		{storage.SMTPSessionQuery{}, []string{SessionID(4), SessionID(3), SessionID(2), SessionID(1)}},
		{storage.SMTPSessionQuery{Limit: 2}, []string{SessionID(4), SessionID(3)}},
		{storage.SMTPSessionQuery{Inbox: "dave"}, []string{SessionID(4)}},
		{storage.SMTPSessionQuery{Inbox: "alice"}, []string{SessionID(1)}},
		{storage.SMTPSessionQuery{Inbox: "al"}, []string{}},
		{storage.SMTPSessionQuery{Inbox: "nobody"}, []string{}},
		// since: strictly after, to the nanosecond.
		{storage.SMTPSessionQuery{Since: t0.Add(time.Second)}, []string{SessionID(4), SessionID(3)}},
		{storage.SMTPSessionQuery{Since: t0.Add(time.Second - time.Nanosecond)}, []string{SessionID(4), SessionID(3), SessionID(2)}},
		{storage.SMTPSessionQuery{Inbox: "carol", Since: t0.Add(time.Second)}, []string{}},
		{storage.SMTPSessionQuery{Inbox: "carol", Since: t0.Add(999 * time.Millisecond)}, []string{SessionID(2)}},
	} {
		if got := listSessions(t, db, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("SMTPSessions(%+v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Two records of one session whose starts differ below the
	// millisecond are one row: the store keeps starts to the millisecond.
	late := SMTPSession(SessionID(5), t0.Add(3*time.Second), true, "erin@inbox.test")
	late.StartedAt = late.StartedAt.Add(300 * time.Microsecond)
	writeSessions(t, db, late, SMTPSession(SessionID(5), t0.Add(3*time.Second), false, "erin@inbox.test"))
	if got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{Inbox: "erin"}); err != nil || len(got) != 1 || got[0].EndedAt == nil {
		t.Errorf("SMTPSessions(erin) after two records of one session in one batch, starts 300 µs apart = %+v, %v; want the ended one", got, err)
	}
	// Without a limit, DefaultSMTPSessions of them.
	var many []storage.SMTPSession
	for i := range storage.DefaultSMTPSessions + 1 {
		many = append(many, SMTPSession(SessionID(100+i), t0.Add(time.Minute+time.Duration(i)*time.Second), true, "frank@inbox.test"))
	}
	writeSessions(t, db, many...)
	if got := listSessions(t, db, storage.SMTPSessionQuery{Limit: 0}); len(got) != storage.DefaultSMTPSessions || got[0] != SessionID(100+storage.DefaultSMTPSessions) {
		t.Errorf("SMTPSessions without a limit = %v, want the newest %d", got, storage.DefaultSMTPSessions)
	}
	bad := SMTPSession("not-a-uuid", t0, true, "alice@inbox.test")
	if err := db.WriteSMTPSessions(ctx, []storage.SMTPSession{bad}); err == nil {
		t.Error("WriteSMTPSessions of a record whose id is no UUID: nil error")
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check after the session log's writes = %+v, %v; want no problem", r, err)
	}
}

// testSMTPLogDelivery: a delivering session's record goes in the
// delivery's commit, naming the emails stored, and replaces its open
// record; an open record written later does not replace it.
func testSMTPLogDelivery(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	t0 := time.Now().UTC()
	s := SMTPSession(SessionID(7), t0, false, "alice@inbox.test", "bob@inbox.test")
	writeSessions(t, db, s)
	final := SMTPSession(SessionID(7), t0, true, "alice@inbox.test", "bob@inbox.test")
	final.Outcome = storage.SMTPDelivered
	final.Data = &storage.SMTPData{Reply: ptr("250 2.0.0 OK " + SessionID(7)), Bytes: 42}
	msg := &storage.Message{From: "app@sender.test", Subject: ptr("hello"), Text: "hello", Raw: []byte("Subject: hello\r\n\r\nhello\r\n"), Session: &final}
	emails, err := db.Deliver(ctx, msg, []string{"alice@inbox.test", "bob@inbox.test"})
	if err != nil {
		t.Fatal(err)
	}
	if final.Emails != nil {
		t.Errorf("Deliver changed the caller's record: Emails = %v", final.Emails)
	}
	writeSessions(t, db, s) // a late open record
	final.Emails = []string{emails[0].ID, emails[1].ID}
	for _, inbox := range []string{"alice", "bob", ""} {
		got, err := db.SMTPSessions(ctx, storage.SMTPSessionQuery{Inbox: inbox})
		if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], final) {
			t.Errorf("SMTPSessions(%q) after the delivery = %+v, %v; want %+v", inbox, got, err, final)
		}
	}
	// A delivery without a record writes none.
	deliver(t, db, "no record", "carol@inbox.test")
	if got := listSessions(t, db, storage.SMTPSessionQuery{}); len(got) != 1 {
		t.Errorf("after a delivery without a record the log lists %v, want one session", got)
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check = %+v, %v; want no problem", r, err)
	}
}

// testSMTPLogRetention: the cap holds at every write and at Sweep, the
// oldest going first; Sweep deletes records past the maximum age.
func testSMTPLogRetention(t *testing.T, open Opener) {
	ctx := context.Background()
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := open(t, Config{Now: clock.Now, Retention: storage.Retention{MaxSessions: 5, SessionsMaxAge: time.Hour}})
	t0 := clock.Now()
	var recs []storage.SMTPSession
	for i := range 8 {
		recs = append(recs, SMTPSession(SessionID(100+i), t0.Add(time.Duration(i)*time.Minute), true, "flood@inbox.test"))
	}
	writeSessions(t, db, recs[:3]...)
	writeSessions(t, db, recs[3:]...)
	want := []string{SessionID(107), SessionID(106), SessionID(105), SessionID(104), SessionID(103)}
	if got := listSessions(t, db, storage.SMTPSessionQuery{Limit: 100}); !slices.Equal(got, want) {
		t.Errorf("after 8 records with a cap of 5, the log lists %v, want the newest five %v", got, want)
	}
	if st, err := db.Stats(ctx); err != nil || st.SMTPSessions != 5 {
		t.Errorf("Stats = %+v, %v; want 5 SMTP sessions", st, err)
	}
	if got := listSessions(t, db, storage.SMTPSessionQuery{Inbox: "flood", Limit: 100}); !slices.Equal(got, want) {
		t.Errorf("by inbox: %v, want %v", got, want)
	}
	// Deliveries hold the cap too.
	for i := range 3 {
		s := SMTPSession(SessionID(200+i), t0.Add(time.Duration(10+i)*time.Minute), true, "mail@inbox.test")
		s.Outcome = storage.SMTPDelivered
		if _, err := db.Deliver(ctx, &storage.Message{Raw: []byte("x\r\n"), Session: &s}, []string{"mail@inbox.test"}); err != nil {
			t.Fatal(err)
		}
	}
	want = []string{SessionID(202), SessionID(201), SessionID(200), SessionID(107), SessionID(106)}
	if got := listSessions(t, db, storage.SMTPSessionQuery{Limit: 100}); !slices.Equal(got, want) {
		t.Errorf("after three deliveries, the log lists %v, want %v", got, want)
	}
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := listSessions(t, db, storage.SMTPSessionQuery{Limit: 100}); !slices.Equal(got, want) {
		t.Errorf("after a sweep, the log lists %v, want %v still", got, want)
	}
	// An hour after t0+10m, the records that started before t0+10m go.
	clock.Advance(70 * time.Minute)
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{SessionID(202), SessionID(201), SessionID(200)}
	if got := listSessions(t, db, storage.SMTPSessionQuery{Limit: 100}); !slices.Equal(got, want) {
		t.Errorf("after a sweep at t0+70m, the log lists %v, want %v", got, want)
	}
	if got := listSessions(t, db, storage.SMTPSessionQuery{Inbox: "flood"}); len(got) != 0 {
		t.Errorf("by the inbox of the records swept: %v, want none", got)
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check = %+v, %v; want no problem", r, err)
	}
}

// testCopyLeavesSMTPLog: a copy carries neither the session log nor the
// fault rules (diagnostics and a test's state, spec §13), and the source
// keeps both.
func testCopyLeavesSMTPLog(t *testing.T, open Opener) {
	ctx := context.Background()
	src, dst, _, _ := copyStores(t, open)
	writeSessions(t, src, SMTPSession(SessionID(1), time.Now(), true, "alice@inbox.test"))
	if _, err := src.CreateFaultRule(ctx, storage.FaultRule{Inbox: "alice", Stage: storage.FaultAtRcpt, Reply: "451"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Import(ctx, src, nil); err != nil {
		t.Fatalf("Import: %v", err)
	}
	if got := listSessions(t, dst, storage.SMTPSessionQuery{}); len(got) != 0 {
		t.Errorf("the copy's session log lists %v, want nothing", got)
	}
	if rules, err := dst.FaultRules(ctx); err != nil || len(rules) != 0 {
		t.Errorf("the copy's fault rules = %+v, %v; want none", rules, err)
	}
	if got := listSessions(t, src, storage.SMTPSessionQuery{}); len(got) != 1 {
		t.Errorf("the source's session log lists %v after the copy, want its record", got)
	}
}
