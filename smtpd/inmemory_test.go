package smtpd

// TEMPORARY: an in-memory SessionLog, for testing smtpd's side of the
// session log (spec §13.1) until both engines implement it. Then the tests
// that use memLog run against each engine's own, and this file goes.

import (
	"context"
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
