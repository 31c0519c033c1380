// Package storetest is the conformance suite of storage.Engine: every
// engine runs it from its own tests, with one line,
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, cfg storetest.Config) storage.Engine { … })
//	}
//
// and so answers as every other engine does, byte for byte.
package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"burner/storage"
)

// Config is what a test asks of the store it opens. The zero value means
// the engine's defaults: the real clock, no retention, no size cap.
type Config struct {
	Now       func() time.Time  // the clock of receivedAt and key times; time.Now when nil
	Retention storage.Retention // what the store keeps; the zero value keeps everything
	Hooks     []storage.Hook    // the webhooks whose events the outbox keeps (spec §9)
}

// Opener opens a new, empty store configured as cfg, closed when t ends.
type Opener func(t *testing.T, cfg Config) storage.Engine

// Run runs the suite against the stores open makes, one per test.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Opener)
	}{
		{"DeliverAndGet", testDeliverAndGet},
		{"ListOrderAndIsolation", testListOrderAndIsolation},
		{"ListFilters", testListFilters},
		{"ListFrom", testListFrom},
		{"FilterLiterals", testFilterLiterals},
		{"ListAfterAndHeader", testListAfterAndHeader},
		{"ListNoBody", testListNoBody},
		{"SinceAndBefore", testSinceAndBefore},
		{"ReceivedAtIncreases", testReceivedAtIncreases},
		{"ReceivedAtConcurrent", testReceivedAtConcurrent},
		{"Clear", testClear},
		{"MarkRead", testMarkRead},
		{"Content", testContent},
		{"DeliverRejectsBadLocalPart", testDeliverRejectsBadLocalPart},
		{"Changed", testChanged},
		{"Keys", testKeys},
		{"KeyLastUsed", testKeyLastUsed},
		{"KeyWithSecret", testKeyWithSecret},
		{"KeyScopes", testKeyScopes},
		{"MetricsKey", testMetricsKey},
		{"MaxPerInboxAtDelivery", testMaxPerInboxAtDelivery},
		{"SweepByAgeAndCap", testSweep},
		{"Attachments", testAttachments},
		{"StatsAndInboxes", testStatsAndInboxes},
		{"StatsOldestAcrossInboxes", testStatsOldestAcrossInboxes},
		{"RecentInboxes", testRecentInboxes},
		{"SweepMany", testSweepMany},
		{"MaxBytes", testMaxBytes},
		{"AttachmentsReplaced", testAttachmentsReplaced},
		{"Auth", testAuth}, // auth.go
		{"HeaderAsReceived", testHeaderAsReceived},
		{"CanceledContext", testCanceledContext},
		{"Closed", testClosed},
		{"Outbox", testOutbox}, // outbox.go
		{"Leases", testLeases}, // lease.go
		{"Copy", testCopy},     // copy.go
		{"ImportRefusesKeys", testImportRefusesKeys},
		{"ExportStops", testExportStops},
		{"CopyKeepsLaterUse", testCopyKeepsLaterUse},
		{"Sessions", testSessions}, // sessions.go
		{"CopyLeavesSessions", testCopyLeavesSessions},
		{"SMTPLog", testSMTPLog}, // smtplog.go
		{"SMTPLogDelivery", testSMTPLogDelivery},
		{"SMTPLogRetention", testSMTPLogRetention},
		{"FaultRules", testFaultRules}, // faults.go
		{"FaultRuleTimes", testFaultRuleTimes},
		{"FaultRulePerMinute", testFaultRulePerMinute},
		{"ArmFaultRules", testArmFaultRules},
		{"CopyLeavesSMTPLog", testCopyLeavesSMTPLog},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open) })
	}
}

// Clock is a fake clock that moves only when told to, safe for
// concurrent use: the Now of a store or server under test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock that stands at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the time the clock stands at.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func ptr(s string) *string { return &s }

func deliver(t testing.TB, db storage.Engine, subject string, to ...string) []storage.Email {
	t.Helper()
	msg := &storage.Message{From: "sender@example.net", FromName: "Sender", Subject: ptr(subject), Body: ptr("<p>" + subject + "</p>"), Text: subject, Raw: []byte("Subject: " + subject + "\r\n\r\nhi\r\n")}
	got, err := db.Deliver(context.Background(), msg, to)
	if err != nil {
		t.Fatalf("Deliver(%q): %v", to, err)
	}
	return got
}

// DeliverMany delivers n messages from 8 goroutines, so that an engine
// that groups commits does; msg(i) gives the subject and recipient of the
// i-th. Their order is not defined.
func DeliverMany(t testing.TB, db storage.Engine, n int, msg func(i int) (subject, to string)) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				subject, to := msg(i)
				m := &storage.Message{Subject: ptr(subject), Text: subject, Raw: []byte("Subject: " + subject + "\r\n\r\n")}
				if _, err := db.Deliver(context.Background(), m, []string{to}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Subjects returns the subjects of es, in order.
func Subjects(es []storage.Email) []string {
	var out []string
	for _, e := range es {
		out = append(out, *e.Subject)
	}
	return out
}

// ListSubjects lists q and returns the subjects, failing t on an error.
func ListSubjects(t *testing.T, db storage.Engine, q storage.Query) []string {
	t.Helper()
	got, err := db.List(context.Background(), q)
	if err != nil {
		t.Fatalf("List(%+v): %v", q, err)
	}
	return Subjects(got)
}
