package smtpd

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"burner/storage"
)

// faultCount reads burner_faults_injected_total for stage.
func faultCount(t *testing.T, reg *prometheus.Registry, stage string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "burner_faults_injected_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == stage {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no burner_faults_injected_total{stage=%q}", stage)
	return 0
}

// faultDaemon runs the daemon with in-memory fault rules and session log.
func faultDaemon(t *testing.T, opts Options) (addr string, db *captureDeliverer, faults *memFaults, log *memLog, reg *prometheus.Registry) {
	t.Helper()
	db = &captureDeliverer{Deliverer: openDB(t)}
	faults, log, reg = newMemFaults(), &memLog{}, prometheus.NewRegistry()
	opts.Faults, opts.SessionLog, opts.Metrics = faults, log, reg
	if opts.Domains == nil {
		opts.Domains = []string{"inbox.test"}
	}
	return startDaemon(t, db, opts), db, faults, log, reg
}

// A test suite makes burner answer 451 three times, then accept: the
// sender's retries, each in the session log.
func TestFaultAtRcpt(t *testing.T) {
	addr, db, faults, log, reg := faultDaemon(t, Options{})
	rule := faults.arm(t, storage.FaultRule{Inbox: "fail-*", Stage: storage.FaultAtRcpt, Reply: "451 4.3.0 Try again later", Times: 3})
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
	if r := faults.rule(rule.ID); r.Used != 3 {
		t.Errorf("the rule was used %d times, want 3", r.Used)
	}
	if n := faultCount(t, reg, "rcpt"); n != 3 {
		t.Errorf("burner_faults_injected_total{stage=rcpt} = %v, want 3", n)
	}
	if n := len(db.delivered()); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
	closed := log.waitClosed(t, 4)
	for i, cr := range closed[:3] {
		rec := cr.rec
		if rec.Outcome != storage.SMTPFaulted || len(rec.Recipients) != 1 || rec.Recipients[0].Fault != rule.ID ||
			*rec.Recipients[0].Reply != "451 4.3.0 Try again later" || *rec.Recipients[0].Inbox != "fail-1" {
			t.Errorf("session %d: %+v, recipients %+v; want faulted by %s", i, rec, rec.Recipients, rule.ID)
		}
	}
	if last := closed[3]; !last.delivered || last.rec.Recipients[0].Fault != "" {
		t.Errorf("the fourth session: %+v, want delivered, no fault", last)
	}
	// Other inboxes never see the rule.
	if err := dial(t, addr).SendMail("app@sender.test", []string{"ok@inbox.test"}, strings.NewReader(simple)); err != nil {
		t.Errorf("an inbox outside the rule: %v", err)
	}
}

// spec §13.2: at data, the rule's reply instead of the 250, and nothing is
// stored (Deliver is never called, so no webhook either).
func TestFaultAtData(t *testing.T) {
	addr, db, faults, log, reg := faultDaemon(t, Options{})
	rule := faults.arm(t, storage.FaultRule{Inbox: "bob", Stage: storage.FaultAtData, Reply: "554 5.6.0 Content refused"})
	c := dialRaw(t, addr)
	c.envelope("alice@inbox.test")
	c.say("RCPT TO:<bob@inbox.test>", "250 2.1.5 OK")
	c.say("DATA", "354 End data with <CR><LF>.<CR><LF>")
	c.sayRaw(simple+".\r\n", "554 5.6.0 Content refused")
	// The rule holds until deleted: the next message too.
	c.mail("bob@inbox.test")
	c.sayRaw("BDAT 5 LAST\r\nx\r\n\r\n", "554 5.6.0 Content refused")
	c.quit()
	if n := len(db.delivered()); n != 0 {
		t.Errorf("Deliver was called %d times, want never", n)
	}
	if n := faultCount(t, reg, "data"); n != 2 {
		t.Errorf("burner_faults_injected_total{stage=data} = %v, want 2", n)
	}
	for i, cr := range log.waitClosed(t, 2) {
		rec := cr.rec
		if rec.Outcome != storage.SMTPFaulted || rec.Data == nil || rec.Data.Fault != rule.ID || *rec.Data.Reply != "554 5.6.0 Content refused" || len(rec.Emails) != 0 {
			t.Errorf("session %d: %+v, data %+v; want faulted at data by %s", i, rec, rec.Data, rule.ID)
		}
	}
}

// A reply without an enhanced code or text gets go-smtp's class code and a
// plain text; a 421 ends the session, as RFC 5321 §3.8 has it.
func TestFaultReplyForms(t *testing.T) {
	addr, _, faults, log, _ := faultDaemon(t, Options{})
	faults.arm(t, storage.FaultRule{Inbox: "bare", Stage: storage.FaultAtRcpt, Reply: "452"})
	faults.arm(t, storage.FaultRule{Inbox: "bare5", Stage: storage.FaultAtRcpt, Reply: "553"})
	faults.arm(t, storage.FaultRule{Inbox: "closing", Stage: storage.FaultAtRcpt, Reply: "421 4.3.2 Shutting down"})
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
	rec := log.waitClosed(t, 1)[0].rec
	if rec.Outcome != storage.SMTPFaulted || len(rec.Recipients) != 3 || *rec.Recipients[2].Reply != "421 4.3.2 Shutting down" {
		t.Errorf("record %+v, want three faulted recipients", rec)
	}
}

// disconnect: the connection closes without a reply; at data, after the
// final dot, with nothing stored.
func TestFaultDisconnect(t *testing.T) {
	addr, db, faults, log, reg := faultDaemon(t, Options{})
	rcptRule := faults.arm(t, storage.FaultRule{Inbox: "gone", Stage: storage.FaultAtRcpt, Disconnect: true})
	dataRule := faults.arm(t, storage.FaultRule{Inbox: "unknown-outcome", Stage: storage.FaultAtData, Reply: "451 4.0.0 never sent", Disconnect: true})

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
	if n := len(db.delivered()); n != 0 {
		t.Errorf("Deliver was called %d times, want never", n)
	}
	if rcpt, data := faultCount(t, reg, "rcpt"), faultCount(t, reg, "data"); rcpt != 1 || data != 1 {
		t.Errorf("faults injected: %v at rcpt, %v at data; want 1 and 1", rcpt, data)
	}
	// A hang-up closes the connection before go-smtp ends the session:
	// the records may close in either order.
	closed := log.waitClosed(t, 2)
	gone, unknown := closed[0].rec, closed[1].rec
	if gone.Recipients[0].Address != "gone@inbox.test" {
		gone, unknown = unknown, gone
	}
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
}

// delay is waited before the reply; Shutdown cuts it short.
func TestFaultDelay(t *testing.T) {
	addr, _, faults, _, _ := faultDaemon(t, Options{})
	faults.arm(t, storage.FaultRule{Inbox: "slow", Stage: storage.FaultAtRcpt, Reply: "450 4.2.1 Slow down", Delay: 300 * time.Millisecond})
	c := dialRaw(t, addr)
	c.send("EHLO client.test\r\n")
	c.lines()
	c.say("MAIL FROM:<a@sender.test>", "250 2.1.0 OK")
	start := time.Now()
	c.say("RCPT TO:<slow@inbox.test>", "450 4.2.1 Slow down")
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("the reply came after %v, want the 300ms delay first", waited)
	}

	srv := New(openDB(t), Options{Faults: faults}, nil)
	faults.arm(t, storage.FaultRule{Inbox: "stuck", Stage: storage.FaultAtRcpt, Reply: "451 4.3.0 later", Delay: time.Minute})
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
}

// perMinute: the rule applies only beyond that many messages for the
// inbox in the last minute; RCPTs the rule refuses are not counted.
func TestFaultPerMinute(t *testing.T) {
	addr, _, faults, _, _ := faultDaemon(t, Options{})
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	faults.now = func() time.Time { return now }
	faults.arm(t, storage.FaultRule{Inbox: "rl-*", Stage: storage.FaultAtRcpt, Reply: "450 4.2.1 Slow down", PerMinute: 2})
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
	now = now.Add(61 * time.Second)
	if err := send("rl-a@inbox.test"); err != nil {
		t.Errorf("a minute later: %v, want it taken", err)
	}
}

// The rules are for tests: a store that cannot answer applies none.
func TestFaultStoreDown(t *testing.T) {
	addr, db, faults, _, _ := faultDaemon(t, Options{})
	faults.arm(t, storage.FaultRule{Inbox: "*", Stage: storage.FaultAtRcpt, Reply: "550 5.0.0 never"})
	faults.err = errors.New("database out of reach")
	if err := dial(t, addr).SendMail("app@sender.test", []string{"x@inbox.test"}, strings.NewReader(simple)); err != nil || len(db.delivered()) != 1 {
		t.Errorf("SendMail with the rules out of reach: %v, %d deliveries; want it taken", err, len(db.delivered()))
	}
}

// A data rule applies when any recipient of the message matches.
func TestFaultAtDataAnyRecipient(t *testing.T) {
	addr, db, faults, _, _ := faultDaemon(t, Options{})
	faults.arm(t, storage.FaultRule{Inbox: "ci-*", Stage: storage.FaultAtData, Reply: "451 4.3.0 later"})
	err := dial(t, addr).SendMail("app@sender.test", []string{"a@inbox.test", "ci-7@inbox.test"}, strings.NewReader(simple))
	wantCode(t, "a message to a and ci-7", err, 451)
	if n := len(db.delivered()); n != 0 {
		t.Errorf("Deliver was called %d times, want never: neither copy is stored", n)
	}
}
