package smtpd

// TEMPORARY: an in-memory SessionLog and Faults, for testing smtpd's side
// of the session log (spec §13.1) and the fault rules (spec §13.2) until
// both engines implement them. Then the tests that use memLog and
// memFaults run against each engine's own, and this file goes.

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"burner/storage"
)

// memLog is a SessionLog that keeps what it is handed.
type memLog struct {
	mu     sync.Mutex
	opened []storage.SMTPSession
	closed []closedRecord
}

type closedRecord struct {
	rec       storage.SMTPSession
	delivered bool
}

func (l *memLog) Open(rec storage.SMTPSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened = append(l.opened, rec)
}

func (l *memLog) Close(rec storage.SMTPSession, delivered bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = append(l.closed, closedRecord{rec, delivered})
}

// waitClosed waits until n records are closed, and returns them: a session
// ends when its connection does, after the client has its last reply.
func (l *memLog) waitClosed(t *testing.T, n int) []closedRecord {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		got := append([]closedRecord(nil), l.closed...)
		l.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records closed within 10s, want %d: %+v", len(got), n, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *memLog) openedRecords() []storage.SMTPSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]storage.SMTPSession(nil), l.opened...)
}

// memFaults is a Faults over rules in memory, counted in one process.
type memFaults struct {
	mu    sync.Mutex
	now   func() time.Time
	rules []storage.FaultRule
	rcpts map[string][]time.Time // by inbox: the RCPTs no rule refused
	err   error                  // returned by Apply when set
}

func newMemFaults() *memFaults {
	return &memFaults{now: time.Now, rcpts: make(map[string][]time.Time)}
}

// arm adds rule, after CleanFaultRule, and returns it with its id.
func (f *memFaults) arm(t *testing.T, rule storage.FaultRule) storage.FaultRule {
	t.Helper()
	rule, err := storage.CleanFaultRule(rule)
	if err != nil {
		t.Fatalf("CleanFaultRule: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rule.ID = "rule-" + strconv.Itoa(len(f.rules)+1)
	rule.CreatedAt = f.now()
	f.rules = append(f.rules, rule)
	return rule
}

func (f *memFaults) rule(id string) storage.FaultRule {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if r.ID == id {
			return r
		}
	}
	return storage.FaultRule{}
}

func (f *memFaults) Apply(_ context.Context, stage storage.FaultStage, inboxes []string) (storage.FaultRule, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return storage.FaultRule{}, false, f.err
	}
	now := f.now()
	for i := range f.rules {
		r := &f.rules[i]
		if r.Stage != stage || r.Times > 0 && r.Used >= r.Times {
			continue
		}
		for _, inbox := range inboxes {
			if !(storage.Scope{Inboxes: []string{r.Inbox}}).Reaches(inbox) {
				continue
			}
			if r.PerMinute > 0 {
				n := 0
				for _, at := range f.rcpts[inbox] {
					if now.Sub(at) < time.Minute {
						n++
					}
				}
				// At rcpt the RCPT being answered is not counted yet; at
				// data, the message's RCPT is.
				if stage == storage.FaultAtRcpt && n < r.PerMinute || stage == storage.FaultAtData && n <= r.PerMinute {
					continue
				}
			}
			r.Used++
			return *r, true, nil
		}
	}
	if stage == storage.FaultAtRcpt {
		f.rcpts[inboxes[0]] = append(f.rcpts[inboxes[0]], now)
	}
	return storage.FaultRule{}, false, nil
}

// captureDeliverer is a Deliverer that keeps the session record each
// delivery carries, then delivers.
type captureDeliverer struct {
	storage.Deliverer
	mu       sync.Mutex
	sessions []*storage.SMTPSession
}

func (d *captureDeliverer) Deliver(ctx context.Context, msg *storage.Message, to []string) ([]storage.Email, error) {
	d.mu.Lock()
	d.sessions = append(d.sessions, msg.Session)
	d.mu.Unlock()
	return d.Deliverer.Deliver(ctx, msg, to)
}

func (d *captureDeliverer) delivered() []*storage.SMTPSession {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*storage.SMTPSession(nil), d.sessions...)
}
