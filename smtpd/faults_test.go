package smtpd

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"burner/storage"
	"burner/storage/storetest"
)

// faultDaemon runs the daemon with the fault rules and session log of db.
func faultDaemon(t *testing.T, db storage.Engine, opts Options) (addr string, log *sessionLog, reg *prometheus.Registry) {
	t.Helper()
	log, reg = newSessionLog(t, db), prometheus.NewRegistry()
	opts.Faults, opts.SessionLog, opts.Metrics = db, log, reg
	if opts.Domains == nil {
		opts.Domains = []string{"inbox.test"}
	}
	return startDaemon(t, db, opts), log, reg
}

// A test suite makes burner answer 451 three times, then accept: the
// sender's retries, each in the session log.
func TestFaultAtRcpt(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		addr, log, reg := faultDaemon(t, db, Options{})
		rule := arm(t, db, storage.FaultRule{Inbox: "fail-*", Stage: storage.FaultAtRcpt, Reply: "451 4.3.0 Try again later", Times: 3})
		for try := range 4 {
			c := dial(t, addr)
			err := c.SendMail("app@sender.test", []string{"fail-1@inbox.test"}, strings.NewReader(simple))
			switch {
			case try < 3:
				wantCode(t, "RCPT with the rule armed", err, 451)
			case err != nil:
				t.Errorf("fourth try, the rule spent: %v", err)
			}
			c.Quit()
		}
		if r := ruleOf(t, db, rule.ID); r.Used != 3 {
			t.Errorf("the rule was used %d times, want 3", r.Used)
		}
		if n := counter(t, reg, "burner_faults_injected_total", "stage", "rcpt"); n != 3 {
			t.Errorf("burner_faults_injected_total{stage=rcpt} = %v, want 3", n)
		}
		if n := len(list(t, db, "fail-1")); n != 1 {
			t.Errorf("%d emails stored, want 1", n)
		}
		recs := log.waitEnded(t, 4)
		for i, rec := range recs[:3] {
			if rec.Outcome != storage.SMTPFaulted || len(rec.Recipients) != 1 || rec.Recipients[0].Fault != rule.ID ||
				*rec.Recipients[0].Reply != "451 4.3.0 Try again later" || *rec.Recipients[0].Inbox != "fail-1" {
				t.Errorf("session %d: %+v, recipients %+v; want faulted by %s", i, rec, rec.Recipients, rule.ID)
			}
		}
		if last := recs[3]; last.Outcome != storage.SMTPDelivered || last.Recipients[0].Fault != "" || len(last.Emails) != 1 {
			t.Errorf("the fourth session: %+v, want delivered, no fault", last)
		}
		// Other inboxes never see the rule.
		if err := dial(t, addr).SendMail("app@sender.test", []string{"ok@inbox.test"}, strings.NewReader(simple)); err != nil {
			t.Errorf("an inbox outside the rule: %v", err)
		}
	})
}

// spec §13.2: at data, the rule's reply instead of the 250, and nothing is
// stored (Deliver is never called, so no webhook either).
func TestFaultAtData(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		addr, log, reg := faultDaemon(t, db, Options{})
		rule := arm(t, db, storage.FaultRule{Inbox: "bob", Stage: storage.FaultAtData, Reply: "554 5.6.0 Content refused"})
		c := dialRaw(t, addr)
		c.envelope("alice@inbox.test")
		c.say("RCPT TO:<bob@inbox.test>", "250 2.1.5 OK")
		c.say("DATA", "354 End data with <CR><LF>.<CR><LF>")
		c.sayRaw(simple+".\r\n", "554 5.6.0 Content refused")
		// The rule holds until deleted: the next message too.
		c.mail("bob@inbox.test")
		c.sayRaw("BDAT 5 LAST\r\nx\r\n\r\n", "554 5.6.0 Content refused")
		c.quit()
		if n := len(list(t, db, "alice")) + len(list(t, db, "bob")); n != 0 {
			t.Errorf("%d emails stored, want none", n)
		}
		if n := counter(t, reg, "burner_faults_injected_total", "stage", "data"); n != 2 {
			t.Errorf("burner_faults_injected_total{stage=data} = %v, want 2", n)
		}
		for i, rec := range log.waitEnded(t, 2) {
			if rec.Outcome != storage.SMTPFaulted || rec.Data == nil || rec.Data.Fault != rule.ID || *rec.Data.Reply != "554 5.6.0 Content refused" || len(rec.Emails) != 0 {
				t.Errorf("session %d: %+v, data %+v; want faulted at data by %s", i, rec, rec.Data, rule.ID)
			}
		}
	})
}

// A reply without an enhanced code or text gets go-smtp's class code and a
// plain text; a 421 ends the session, as RFC 5321 §3.8 has it.
func TestFaultReplyForms(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		addr, log, _ := faultDaemon(t, db, Options{})
		arm(t, db, storage.FaultRule{Inbox: "bare", Stage: storage.FaultAtRcpt, Reply: "452"})
		arm(t, db, storage.FaultRule{Inbox: "bare5", Stage: storage.FaultAtRcpt, Reply: "553"})
		arm(t, db, storage.FaultRule{Inbox: "closing", Stage: storage.FaultAtRcpt, Reply: "421 4.3.2 Shutting down"})
		c := dialRaw(t, addr)
		c.send("EHLO client.test\r\n")
		c.lines()
		c.say("MAIL FROM:<a@sender.test>", "250 2.1.0 OK")
		c.say("RCPT TO:<bare@inbox.test>", "452 4.0.0 Try again later")
		c.say("RCPT TO:<bare5@inbox.test>", "553 5.0.0 Refused")
		c.say("RCPT TO:<closing@inbox.test>", "421 4.3.2 Shutting down")
		if rest, err := io.ReadAll(c.r.R); err != nil || len(rest) != 0 {
			t.Errorf("after a 421: %q, %v; want the connection closed", rest, err)
		}
		rec := log.waitEnded(t, 1)[0]
		if rec.Outcome != storage.SMTPFaulted || len(rec.Recipients) != 3 || *rec.Recipients[2].Reply != "421 4.3.2 Shutting down" {
			t.Errorf("record %+v, want three faulted recipients", rec)
		}
	})
}

// disconnect: the connection closes without a reply; at data, after the
// final dot, with nothing stored.
func TestFaultDisconnect(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		addr, log, reg := faultDaemon(t, db, Options{})
		rcptRule := arm(t, db, storage.FaultRule{Inbox: "gone", Stage: storage.FaultAtRcpt, Disconnect: true})
		dataRule := arm(t, db, storage.FaultRule{Inbox: "unknown-outcome", Stage: storage.FaultAtData, Reply: "451 4.0.0 never sent", Disconnect: true})

		c := dialRaw(t, addr)
		c.send("EHLO client.test\r\n")
		c.lines()
		c.say("MAIL FROM:<a@sender.test>", "250 2.1.0 OK")
		// Pipelined: nothing after the RCPT is read.
		c.send("RCPT TO:<gone@inbox.test>\r\nDATA\r\n")
		if rest, err := io.ReadAll(c.r.R); err != nil || len(rest) != 0 {
			t.Errorf("RCPT with a disconnect rule: %q, %v; want the connection closed without a reply", rest, err)
		}

		c = dialRaw(t, addr)
		c.envelope("unknown-outcome@inbox.test")
		c.say("DATA", "354 End data with <CR><LF>.<CR><LF>")
		c.send(simple + ".\r\n")
		if rest, err := io.ReadAll(c.r.R); err != nil || len(rest) != 0 {
			t.Errorf("the end of data with a disconnect rule: %q, %v; want the connection closed without a reply", rest, err)
		}
		if n := len(list(t, db, "unknown-outcome")); n != 0 {
			t.Errorf("%d emails stored, want none", n)
		}
		if rcpt, data := counter(t, reg, "burner_faults_injected_total", "stage", "rcpt"), counter(t, reg, "burner_faults_injected_total", "stage", "data"); rcpt != 1 || data != 1 {
			t.Errorf("faults injected: %v at rcpt, %v at data; want 1 and 1", rcpt, data)
		}
		recs := log.waitEnded(t, 2)
		gone, unknown := recs[0], recs[1]
		if gone.Outcome != storage.SMTPFaulted || len(gone.Recipients) != 1 || gone.Recipients[0].Reply != nil || gone.Recipients[0].Fault != rcptRule.ID {
			t.Errorf("rcpt disconnect: %+v, recipients %+v; want one with no reply, fault %s", gone, gone.Recipients, rcptRule.ID)
		}
		if last := gone.Transcript[len(gone.Transcript)-1]; last != (storage.TranscriptLine{C: "RCPT TO:<gone@inbox.test>"}) {
			t.Errorf("rcpt disconnect: the transcript ends with %+v, want the RCPT with no reply", last)
		}
		if unknown.Outcome != storage.SMTPFaulted || unknown.Data == nil || unknown.Data.Reply != nil || unknown.Data.Fault != dataRule.ID ||
			unknown.Data.Bytes != int64(len(simple)) {
			t.Errorf("data disconnect: %+v, data %+v; want no reply, fault %s", unknown, unknown.Data, dataRule.ID)
		}
	})
}

// delay is waited before the reply; Shutdown cuts it short.
func TestFaultDelay(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		addr, _, _ := faultDaemon(t, db, Options{})
		arm(t, db, storage.FaultRule{Inbox: "slow", Stage: storage.FaultAtRcpt, Reply: "450 4.2.1 Slow down", Delay: 300 * time.Millisecond})
		c := dialRaw(t, addr)
		c.send("EHLO client.test\r\n")
		c.lines()
		c.say("MAIL FROM:<a@sender.test>", "250 2.1.0 OK")
		start := time.Now()
		c.say("RCPT TO:<slow@inbox.test>", "450 4.2.1 Slow down")
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Errorf("the reply came after %v, want the 300ms delay first", waited)
		}

		srv := New(db, Options{Faults: db}, nil)
		arm(t, db, storage.FaultRule{Inbox: "stuck", Stage: storage.FaultAtRcpt, Reply: "451 4.3.0 later", Delay: time.Minute})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		c = dialRaw(t, ln.Addr().String())
		c.send("EHLO client.test\r\nMAIL FROM:<a@sender.test>\r\nRCPT TO:<stuck@inbox.test>\r\n")
		c.lines()
		c.lines()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
		}()
		// The client's 10s deadline fails the test if the minute runs.
		if got := c.lines(); len(got) != 1 || got[0] != "451 4.3.0 later" {
			t.Errorf("the delayed reply at Shutdown: %q", got)
		}
		c.quit()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// perMinute: the rule applies only beyond that many messages for the
// inbox in the last minute; RCPTs the rule refuses are not counted.
func TestFaultPerMinute(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		clock := storetest.NewClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
		db := open(t, clock.Now)
		addr, _, _ := faultDaemon(t, db, Options{})
		arm(t, db, storage.FaultRule{Inbox: "rl-*", Stage: storage.FaultAtRcpt, Reply: "450 4.2.1 Slow down", PerMinute: 2})
		send := func(to string) error {
			c := dial(t, addr)
			defer c.Quit()
			return c.SendMail("app@sender.test", []string{to}, strings.NewReader(simple))
		}
		for i, want := range []int{250, 250, 450, 450} {
			err := send("rl-a@inbox.test")
			if want == 250 && err != nil {
				t.Errorf("message %d: %v, want it taken", i, err)
			}
			if want == 450 {
				wantCode(t, "message past the rate", err, 450)
			}
		}
		if err := send("rl-b@inbox.test"); err != nil {
			t.Errorf("another inbox of the pattern: %v, want its own count", err)
		}
		clock.Advance(61 * time.Second)
		if err := send("rl-a@inbox.test"); err != nil {
			t.Errorf("a minute later: %v, want it taken", err)
		}
	})
}

// The rules are for tests: a store that cannot answer applies none.
func TestFaultStoreDown(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db, down := open(t, nil), open(t, nil)
		arm(t, down, storage.FaultRule{Inbox: "*", Stage: storage.FaultAtRcpt, Reply: "550 5.0.0 never"})
		down.Close()
		addr := startDaemon(t, db, Options{Faults: down})
		if err := dial(t, addr).SendMail("app@sender.test", []string{"x@inbox.test"}, strings.NewReader(simple)); err != nil || len(list(t, db, "x")) != 1 {
			t.Errorf("SendMail with the rules out of reach: %v; want it taken", err)
		}
	})
}

// A data rule applies when any recipient of the message matches.
func TestFaultAtDataAnyRecipient(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		addr, _, _ := faultDaemon(t, db, Options{})
		arm(t, db, storage.FaultRule{Inbox: "ci-*", Stage: storage.FaultAtData, Reply: "451 4.3.0 later"})
		err := dial(t, addr).SendMail("app@sender.test", []string{"a@inbox.test", "ci-7@inbox.test"}, strings.NewReader(simple))
		wantCode(t, "a message to a and ci-7", err, 451)
		if n := len(list(t, db, "a")) + len(list(t, db, "ci-7")); n != 0 {
			t.Errorf("%d emails stored, want none: neither copy is stored", n)
		}
	})
}
