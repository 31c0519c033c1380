package smtpd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"burner/internal/pgtest"
	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/postgres"
)

// quit ends the session and waits until the daemon has closed the
// connection: by then go-smtp has logged the session out, and its record
// is closed.
func (c *rawClient) quit() {
	c.t.Helper()
	c.send("QUIT\r\n")
	c.lines()
	if rest, err := io.ReadAll(c.r.R); err != nil || len(rest) > 0 {
		c.t.Fatalf("after QUIT: %q, %v; want the connection closed", rest, err)
	}
}

// ehloReply is the reply to EHLO as the transcript has it.
const ehloReply = "250-mx.burner.test\n250-PIPELINING\n250-8BITMIME\n250-ENHANCEDSTATUSCODES\n250-CHUNKING\n250-SMTPUTF8\n250-SIZE 10485760\n250 LIMITS RCPTMAX=100"

func ptr[T any](v T) *T { return &v }

// wantTranscript compares a transcript with want, where "<id>" in want
// stands for id.
func wantTranscript(t *testing.T, what string, got []storage.TranscriptLine, id string, want ...storage.TranscriptLine) {
	t.Helper()
	for i := range want {
		want[i].S = strings.ReplaceAll(want[i].S, "<id>", id)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: transcript\n%s\nwant\n%s", what, showLines(got), showLines(want))
	}
}

func showLines(lines []storage.TranscriptLine) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "\tC: %q\n\tS: %q\n", l.C, l.S)
	}
	return b.String()
}

// A delivered session: its record rides on the delivery, in its commit;
// it was listed open from its first RCPT.
func TestRecordDelivered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		log := newSessionLog(t, db)
		c := dialRaw(t, startDaemon(t, db, Options{Hostname: "mx.burner.test", Domains: []string{"inbox.test"}, Node: "node-a", SessionLog: log}))
		c.say("EHLO client.test", strings.Split(ehloReply, "\n")...)
		c.say("MAIL FROM:<app@sender.test>", "250 2.1.0 OK")
		c.say("RCPT TO:<alice@inbox.test>", "250 2.1.5 OK")
		opened := log.records(t)
		c.say("RCPT TO:<bob@elsewhere.test>", "550 5.1.1 Relay access denied: not an inbox domain here")
		c.say("RCPT TO:<Bob@Inbox.test>", "250 2.1.5 OK")
		c.say("DATA", "354 End data with <CR><LF>.<CR><LF>")
		reply := c.sayLike(simple+".\r\n", "250 2.0.0 OK "+uuid7)
		id := strings.TrimPrefix(reply, "250 2.0.0 OK ")
		c.quit()

		if len(opened) != 1 || opened[0].ID != id || opened[0].EndedAt != nil || opened[0].Outcome != "" || len(opened[0].Recipients) != 1 {
			t.Fatalf("listed after the first RCPT: %+v, want one open record of session %s, with its first recipient", opened, id)
		}
		recs := log.waitEnded(t, 1)
		if len(recs) != 1 {
			t.Fatalf("records %+v, want one", recs)
		}
		rec := recs[0]
		alice, bob := list(t, db, "alice"), list(t, db, "bob")
		if len(alice) != 1 || len(bob) != 1 {
			t.Fatalf("stored %d and %d, want one email each", len(alice), len(bob))
		}
		if rec.ID != id || rec.Node != "node-a" || rec.Client != (storage.SMTPClient{IP: "127.0.0.1", HELO: "client.test"}) || rec.TLS != nil ||
			rec.MailFrom != "app@sender.test" || rec.Outcome != storage.SMTPDelivered || rec.EndedAt == nil || rec.EndedAt.Before(rec.StartedAt) ||
			!reflect.DeepEqual(rec.Emails, []string{alice[0].ID, bob[0].ID}) {
			t.Errorf("record = %+v; want session %s from 127.0.0.1, delivered as %s and %s", rec, id, alice[0].ID, bob[0].ID)
		}
		wantRcpts := []storage.SMTPRecipient{
			{Address: "alice@inbox.test", Inbox: ptr("alice"), Reply: ptr("250 2.1.5 OK")},
			{Address: "bob@elsewhere.test", Reply: ptr("550 5.1.1 Relay access denied: not an inbox domain here")},
			{Address: "Bob@Inbox.test", Inbox: ptr("bob"), Reply: ptr("250 2.1.5 OK")},
		}
		if !reflect.DeepEqual(rec.Recipients, wantRcpts) {
			t.Errorf("recipients = %+v, want %+v", rec.Recipients, wantRcpts)
		}
		if rec.Data == nil || *rec.Data != (storage.SMTPData{Reply: rec.Data.Reply, Bytes: int64(len(simple))}) || *rec.Data.Reply != reply {
			t.Errorf("data = %+v, want the 250 and %d octets", rec.Data, len(simple))
		}
		wantTranscript(t, "delivered", rec.Transcript, id,
			storage.TranscriptLine{C: "EHLO client.test", S: ehloReply},
			storage.TranscriptLine{C: "MAIL FROM:<app@sender.test>", S: "250 2.1.0 OK"},
			storage.TranscriptLine{C: "RCPT TO:<alice@inbox.test>", S: "250 2.1.5 OK"},
			storage.TranscriptLine{C: "RCPT TO:<bob@elsewhere.test>", S: "550 5.1.1 Relay access denied: not an inbox domain here"},
			storage.TranscriptLine{C: "RCPT TO:<Bob@Inbox.test>", S: "250 2.1.5 OK"},
			storage.TranscriptLine{C: "DATA", S: "354 End data with <CR><LF>.<CR><LF>"},
			storage.TranscriptLine{C: ".", S: "250 2.0.0 OK <id>"},
		)
		wantTranscript(t, "open", opened[0].Transcript, id, rec.Transcript[:3]...)
	})
}

// One connection, two transactions: a refused one that ends at RSET, and
// one the client leaves; and a connection that never reached RCPT, which
// is not recorded.
func TestRecordRejectedAndAborted(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		log := newSessionLog(t, db)
		addr := startDaemon(t, db, Options{Hostname: "mx.burner.test", Domains: []string{"inbox.test"}, SessionLog: log})
		c := dialRaw(t, addr)
		c.send("EHLO client.test\r\n")
		c.lines()
		c.say("MAIL FROM:<a@sender.test>", "250 2.1.0 OK")
		c.say("RCPT TO:<x@elsewhere.test>", "550 5.1.1 Relay access denied: not an inbox domain here")
		c.say("DATA", "554 5.5.1 No valid recipients")
		c.say("RSET", "250 2.0.0 OK")
		c.say("MAIL FROM:<>", "250 2.1.0 OK")
		c.say("RCPT TO:<carol@inbox.test>", "250 2.1.5 OK")
		c.quit()
		c = dialRaw(t, addr)
		c.send("EHLO client.test\r\n")
		c.lines()
		c.say("MAIL FROM:<a@sender.test>", "250 2.1.0 OK")
		c.quit()

		recs := log.waitEnded(t, 2)
		if len(recs) != 2 {
			t.Fatalf("records %+v; want two", recs)
		}
		rejected, aborted := recs[0], recs[1]
		if rejected.ID == aborted.ID || rejected.Outcome != storage.SMTPRejected || aborted.Outcome != storage.SMTPAborted {
			t.Errorf("outcomes %q and %q (ids %s, %s), want rejected, then aborted, with two ids", rejected.Outcome, aborted.Outcome, rejected.ID, aborted.ID)
		}
		if rejected.Data == nil || rejected.Data.Reply == nil || *rejected.Data.Reply != "554 5.5.1 No valid recipients" || rejected.Data.Bytes != 0 {
			t.Errorf("the refused DATA: data = %+v, want its 554", rejected.Data)
		}
		if aborted.Data != nil || aborted.MailFrom != "" || len(aborted.Recipients) != 1 || *aborted.Recipients[0].Inbox != "carol" {
			t.Errorf("aborted = %+v, want no data, the null sender and carol", aborted)
		}
		wantTranscript(t, "rejected", rejected.Transcript, "",
			storage.TranscriptLine{C: "EHLO client.test", S: ehloReply},
			storage.TranscriptLine{C: "MAIL FROM:<a@sender.test>", S: "250 2.1.0 OK"},
			storage.TranscriptLine{C: "RCPT TO:<x@elsewhere.test>", S: "550 5.1.1 Relay access denied: not an inbox domain here"},
			storage.TranscriptLine{C: "DATA", S: "554 5.5.1 No valid recipients"},
			storage.TranscriptLine{C: "RSET", S: "250 2.0.0 OK"},
		)
		wantTranscript(t, "aborted", aborted.Transcript, "",
			storage.TranscriptLine{C: "MAIL FROM:<>", S: "250 2.1.0 OK"},
			storage.TranscriptLine{C: "RCPT TO:<carol@inbox.test>", S: "250 2.1.5 OK"},
			storage.TranscriptLine{C: "QUIT", S: "221 2.0.0 mx.burner.test closing connection"},
		)
		if aborted.StartedAt.Before(*rejected.EndedAt) {
			t.Errorf("the second session started at %v, the first ended at %v: want it to start after", aborted.StartedAt, rejected.EndedAt)
		}
	})
}

// STARTTLS begins a new go-smtp session on the connection: the record
// still has what came before it, and the TLS under it.
func TestRecordAfterSTARTTLS(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		log := newSessionLog(t, db)
		c := dialRaw(t, startDaemon(t, db, Options{Hostname: "mx.burner.test", TLSConfig: selfSigned(t), SessionLog: log}))
		c.send("EHLO raw.test\r\n")
		before := c.lines()
		c.say("STARTTLS", "220 2.0.0 Ready to start TLS")
		tc := tls.Client(c.conn, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
		c.conn, c.r = tc, textproto.NewReader(bufio.NewReader(tc))
		c.send("EHLO raw.test\r\n")
		after := c.lines()
		c.envelope("tls@inbox.test")
		c.send("DATA\r\n")
		c.lines()
		reply := c.sayLike(simple+".\r\n", "250 2.0.0 OK "+uuid7)
		c.quit()
		rec := log.waitEnded(t, 1)[0]
		if rec.TLS == nil || rec.TLS.Version != "TLS 1.3" || rec.TLS.Cipher == "" || !strings.HasPrefix(rec.TLS.Cipher, "TLS_") {
			t.Errorf("tls = %+v, want TLS 1.3 and its cipher", rec.TLS)
		}
		wantTranscript(t, "after STARTTLS", rec.Transcript, strings.TrimPrefix(reply, "250 2.0.0 OK "),
			storage.TranscriptLine{C: "EHLO raw.test", S: strings.Join(before, "\n")},
			storage.TranscriptLine{C: "STARTTLS", S: "220 2.0.0 Ready to start TLS"},
			storage.TranscriptLine{C: "EHLO raw.test", S: strings.Join(after, "\n")},
			storage.TranscriptLine{C: "EHLO raw.test", S: strings.Join(after, "\n")},
			storage.TranscriptLine{C: "MAIL FROM:<a@sender.test>", S: "250 2.1.0 OK"},
			storage.TranscriptLine{C: "RCPT TO:<tls@inbox.test>", S: "250 2.1.5 OK"},
			storage.TranscriptLine{C: "DATA", S: "354 End data with <CR><LF>.<CR><LF>"},
			storage.TranscriptLine{C: ".", S: "250 2.0.0 OK <id>"},
		)
	})
}

// spec §13.1: never message data, never an AUTH secret; each side of a
// line at most 512 octets; at most 200 lines, the last saying how many
// were left out. The store is read as it lies, not only as the API
// decodes it: no secret and no body text in any record, of either engine.
func TestRecordTranscriptBounds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		log := newSessionLog(t, db)
		c := dialRaw(t, startDaemon(t, db, Options{Hostname: "mx.burner.test", SessionLog: log}))
		c.send("EHLO client.test\r\n")
		c.lines()
		const secret = "AGFsaWNlAHMzY3IzdC1wYXNzd29yZA==" // \0alice\0s3cr3t-password
		c.say("AUTH PLAIN "+secret, "503 5.5.1 Authentication not enabled: burner only receives mail")
		c.mail("bounds@inbox.test")
		long := "NOOP " + strings.Repeat("n", 1500)
		c.say(long, "250 2.0.0 OK")
		unknown := "XYZZ " + strings.Repeat("x", 700)
		c.say(unknown, "500 5.5.2 Syntax errors, XYZZ command unrecognized")
		const noops = 250
		for range noops {
			c.say("NOOP", "250 2.0.0 OK")
		}
		c.send("DATA\r\n")
		c.lines()
		body := "Subject: s3cr3t-password in the subject\r\n\r\nthe body says s3cr3t-password and more\r\n"
		c.sayLike(body+".\r\n", "250 2.0.0 OK "+uuid7)
		c.quit()
		rec := log.waitEnded(t, 1)[0]
		dump := fmt.Sprintf("%#v", rec)
		for _, leak := range []string{secret, "s3cr3t", "the body says"} {
			if strings.Contains(dump, leak) {
				t.Errorf("the record holds %q: %s", leak, dump)
			}
		}
		tr := rec.Transcript
		if len(tr) != storage.MaxTranscriptLines {
			t.Fatalf("transcript of %d lines, want %d", len(tr), storage.MaxTranscriptLines)
		}
		// EHLO, AUTH, MAIL, RCPT, the long NOOP, the unknown command, the
		// NOOPs, DATA and the final dot.
		total := 6 + noops + 2
		if want := (storage.TranscriptLine{C: "...", S: strconv.Itoa(total-199) + " more exchanges left out"}); tr[199] != want {
			t.Errorf("last line %+v, want %+v", tr[199], want)
		}
		if tr[1].C != "AUTH PLAIN" {
			t.Errorf("the AUTH line is %q, want the mechanism only", tr[1].C)
		}
		if tr[4].C != long[:509]+"..." || tr[5].C != unknown[:509]+"..." {
			t.Errorf("long lines: %q, %q; want each cut at 512 octets, marked", tr[4].C, tr[5].C)
		}
		for i, l := range tr {
			if len(l.C) > storage.MaxTranscriptText || len(l.S) > storage.MaxTranscriptText {
				t.Errorf("line %d is %d and %d octets long", i, len(l.C), len(l.S))
			}
		}
	})
}

func TestClip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("a", 512), strings.Repeat("a", 512)},
		{strings.Repeat("a", 513), strings.Repeat("a", 509) + "..."},
		// A cut never splits a character.
		{strings.Repeat("a", 508) + "é" + strings.Repeat("b", 10), strings.Repeat("a", 508) + "..."},
		{strings.Repeat("a", 507) + "é" + strings.Repeat("b", 10), strings.Repeat("a", 507) + "é..."},
		{"bad \xc3(", "bad \uFFFD("},
	} {
		if got := clip(tc.in); got != tc.want || len(got) > storage.MaxTranscriptText {
			t.Errorf("clip(%.40q...) = %.40q... (%d octets), want %.40q...", tc.in, got, len(got), tc.want)
		}
	}
}

func TestTranscriptCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd            string
		afterChallenge bool
		want           string
	}{
		{"AUTH PLAIN AGFsaWNlAHNlY3JldA==", false, "AUTH PLAIN"},
		{"auth login", false, "AUTH login"},
		{"AUTH", false, "AUTH"},
		{"c2VjcmV0", true, "<hidden>"},
		{"MAIL FROM:<a@b.test>", false, "MAIL FROM:<a@b.test>"},
		{"NOOP \xff\xfe", false, "NOOP \uFFFD"},
	} {
		if got := transcriptCommand([]byte(tc.cmd), tc.afterChallenge); got != tc.want {
			t.Errorf("transcriptCommand(%q, %v) = %q, want %q", tc.cmd, tc.afterChallenge, got, tc.want)
		}
	}
}

// spec §13.1: past smtp.session_log_rate, a session that stores no mail
// is counted, not logged; one that stores mail is written with it.
func TestRecordRate(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		log := newSessionLog(t, db)
		reg := prometheus.NewRegistry()
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) // stands still: no token comes back
		addr := startDaemon(t, db, Options{Domains: []string{"inbox.test"}, SessionLog: log, SessionLogRate: 2, Metrics: reg,
			Now: func() time.Time { return now }})
		for i := range 5 {
			c := dialRaw(t, addr)
			c.send("EHLO flood.test\r\n")
			c.lines()
			c.say("MAIL FROM:<a@sender.test>", "250 2.1.0 OK")
			c.say(fmt.Sprintf("RCPT TO:<x%d@elsewhere.test>", i), "550 5.1.1 Relay access denied: not an inbox domain here")
			c.quit()
		}
		if n := counter(t, reg, "burner_smtp_sessions_unlogged_total"); n != 3 {
			t.Errorf("unlogged = %v, want 3", n)
		}
		if recs := log.waitEnded(t, 2); len(recs) != 2 {
			t.Errorf("%d records, want 2: %+v", len(recs), recs)
		}
		c := dialRaw(t, addr)
		c.envelope("kept@inbox.test")
		c.send("DATA\r\n")
		c.lines()
		c.sayLike(simple+".\r\n", "250 2.0.0 OK "+uuid7)
		c.quit()
		recs := log.waitEnded(t, 3)
		if last := recs[len(recs)-1]; len(recs) != 3 || last.Outcome != storage.SMTPDelivered || !last.StartedAt.Equal(now) || len(last.Emails) != 1 {
			t.Errorf("the delivered session past the rate: %+v, want its record, delivered", last)
		}
		if n := counter(t, reg, "burner_smtp_sessions_unlogged_total"); n != 3 {
			t.Errorf("unlogged = %v, want 3", n)
		}
	})
}

// TestRecordRateSparesDelivered: the rate bounds the sessions that store
// no mail (spec §13.1), so sessions that deliver do not use it up.
func TestRecordRateSparesDelivered(t *testing.T) {
	db := openDB(t)
	log := newSessionLog(t, db)
	reg := prometheus.NewRegistry()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) // stands still: no token comes back
	addr := startDaemon(t, db, Options{Domains: []string{"inbox.test"}, SessionLog: log, SessionLogRate: 1, Metrics: reg,
		Now: func() time.Time { return now }})
	for range 3 {
		c := dialRaw(t, addr)
		c.envelope("kept@inbox.test")
		c.send("DATA\r\n")
		c.lines()
		c.sayLike(simple+".\r\n", "250 2.0.0 OK "+uuid7)
		c.quit()
	}
	for i := range 2 {
		c := dialRaw(t, addr)
		c.send("EHLO flood.test\r\n")
		c.lines()
		c.say("MAIL FROM:<a@sender.test>", "250 2.1.0 OK")
		c.say(fmt.Sprintf("RCPT TO:<x%d@elsewhere.test>", i), "550 5.1.1 Relay access denied: not an inbox domain here")
		c.quit()
	}
	if recs := log.waitEnded(t, 4); len(recs) != 4 {
		t.Errorf("%d records, want the 3 deliveries and the first refusal: %+v", len(recs), recs)
	}
	if n := counter(t, reg, "burner_smtp_sessions_unlogged_total"); n != 1 {
		t.Errorf("unlogged = %v, want 1: the second refusal, past the rate of 1", n)
	}
}

// A message cut short, a storage failure, and chunks: the data's part of
// the record. The mail goes to one store, the log to another, so that
// the mail's store can fail alone.
func TestRecordData(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db, logDB := open(t, nil), open(t, nil)
		log := newSessionLog(t, logDB)
		addr := startDaemon(t, db, Options{SessionLog: log, DataTimeout: 300 * time.Millisecond})

		c := dialRaw(t, addr)
		c.envelope("chunks@inbox.test")
		c.sayRaw("BDAT 10\r\nSubject: b", "250 2.0.0 OK, 10 octets received")
		reply := c.sayLike("BDAT 9 LAST\r\nat\r\n\r\nx\r\n", "250 2.0.0 OK "+uuid7)
		c.quit()
		// Written with the delivery, in the mail's store, before the 250.
		recs, err := db.SMTPSessions(context.Background(), storage.SMTPSessionQuery{Inbox: "chunks"})
		if err != nil || len(recs) != 1 {
			t.Fatalf("the mail's store lists %+v, %v; want the delivered session", recs, err)
		}
		rec := recs[0]
		if rec.Outcome != storage.SMTPDelivered || rec.Data == nil || rec.Data.Bytes != 19 || *rec.Data.Reply != reply || len(rec.Transcript) != 5 ||
			rec.Transcript[3].C != "BDAT 10" || rec.Transcript[4] != (storage.TranscriptLine{C: "BDAT 9 LAST", S: reply}) {
			t.Errorf("BDAT: %+v, data %+v; want 19 octets delivered", rec, rec.Data)
		}

		c = dialRaw(t, addr)
		c.envelope("slow@inbox.test")
		c.send("DATA\r\n")
		c.lines()
		c.send("Subject: slow\r\n\r\nstarted but never ")
		if got := c.lines(); got[0] != "421 4.4.2 Timeout or error reading the message, closing connection" {
			t.Errorf("stalled DATA: %q", got)
		}
		rec = log.waitEnded(t, 1)[0]
		if rec.Outcome != storage.SMTPAborted || rec.Data == nil || rec.Data.Reply == nil || !strings.HasPrefix(*rec.Data.Reply, "421 4.4.2") ||
			rec.Data.Bytes != int64(len("Subject: slow\r\n\r\nstarted but never ")) {
			t.Errorf("stalled DATA: outcome %q, data %+v; want aborted, with the 421 and what came", rec.Outcome, rec.Data)
		}
		if last := rec.Transcript[len(rec.Transcript)-1]; last.C != "" || !strings.HasPrefix(last.S, "421 ") {
			t.Errorf("stalled DATA: the transcript ends with %+v, want the 421 to no command", last)
		}

		c = dialRaw(t, addr)
		c.envelope("lost@inbox.test")
		db.Close() // the disk goes away between RCPT and DATA
		c.send("DATA\r\n")
		c.lines()
		c.sayRaw(simple+".\r\n", "451 4.3.0 Temporary storage failure, try again later")
		c.quit()
		rec = log.waitEnded(t, 2)[1]
		if rec.Outcome != storage.SMTPRejected || rec.Data == nil || *rec.Data.Reply != "451 4.3.0 Temporary storage failure, try again later" || len(rec.Emails) != 0 {
			t.Errorf("storage failure: %+v, data %+v; want rejected with the 451", rec, rec.Data)
		}
	})
}

// spec §13.1, as the store holds it: a session that sent an AUTH secret
// and a message whose data a fault rule refused (so that the store holds
// no mail, only the session's record) leaves neither in the stored bytes:
// the bbolt file, or the PostgreSQL rows of the log.
func TestRecordStoresNoSecret(t *testing.T) {
	const secret, body = "AGFsaWNlAHMzY3IzdC1wYXNzd29yZA==", "the body says s3cr3t-password"
	send := func(t *testing.T, db storage.Engine) {
		t.Helper()
		arm(t, db, storage.FaultRule{Inbox: "grep", Stage: storage.FaultAtData, Reply: "554 5.6.0 Content refused"})
		log := newSessionLog(t, db)
		c := dialRaw(t, startDaemon(t, db, Options{Faults: db, SessionLog: log}))
		c.send("EHLO client.test\r\n")
		c.lines()
		c.say("AUTH PLAIN "+secret, "503 5.5.1 Authentication not enabled: burner only receives mail")
		c.mail("grep@inbox.test")
		c.say("DATA", "354 End data with <CR><LF>.<CR><LF>")
		c.sayRaw("Subject: s3cr3t-password\r\n\r\n"+body+"\r\n.\r\n", "554 5.6.0 Content refused")
		c.quit()
		if rec := log.waitEnded(t, 1)[0]; rec.Outcome != storage.SMTPFaulted || rec.Transcript[1].C != "AUTH PLAIN" {
			t.Fatalf("the record: %+v, want the faulted session", rec)
		}
		if len(list(t, db, "grep")) != 0 {
			t.Fatal("the message was stored")
		}
	}
	leaks := func(t *testing.T, where string, data []byte) {
		t.Helper()
		if !bytes.Contains(data, []byte("grep@inbox.test")) {
			t.Fatalf("%s does not hold the record (no recipient address in %d bytes): the grep would prove nothing", where, len(data))
		}
		for _, leak := range []string{secret, "s3cr3t", "the body says"} {
			if bytes.Contains(data, []byte(leak)) {
				t.Errorf("%s holds %q", where, leak)
			}
		}
	}
	t.Run("bbolt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "burner.db")
		db, err := boltdb.Open(path, boltdb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		send(t, db)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		leaks(t, "the data file", data)
	})
	t.Run("postgres", func(t *testing.T) {
		dbURL := pgtest.Database(t)
		db, err := postgres.Open(context.Background(), dbURL, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		send(t, db)
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var rows []byte
		if err := conn.QueryRow(context.Background(), `SELECT string_agg(record || convert_to(array_to_string(inboxes, ' '), 'UTF8'), ''::bytea) FROM smtp_sessions`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		leaks(t, "the smtp_sessions table", rows)
	})
}
