package smtpd

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"burner/storage"
)

// SessionStore is where a SessionWriter writes the session log: a
// storage.Engine is one.
type SessionStore interface {
	WriteSMTPSessions(ctx context.Context, recs []storage.SMTPSession) error
}

// The batches of a SessionWriter (spec §13.1: records that store no mail
// are written in batches, so that no session waits for the store).
const (
	writerEvery      = 200 * time.Millisecond // how often what waits is written
	writerBatch      = 256                    // a batch this large is written at once
	writerMaxPending = 4096                   // records that may wait; past it a record is dropped
	writerTimeout    = 10 * time.Second       // for one batch's write
)

// SessionWriter is the SessionLog that writes records to a store in
// batches, from a goroutine of its own: Open and Close never wait for the
// store. Two records of one session that meet in a batch are written as
// one, the final: most sessions that store no mail last a few
// milliseconds, and cost one write. A record that is written with its
// delivery drops its open record if that still waits. When the store
// fails, the batch is dropped, logged: the log is for diagnostics, and
// must not hold up mail. Shutdown writes what waits and stops it.
type SessionWriter struct {
	store SessionStore
	log   *slog.Logger

	writing sync.Mutex // held through a Flush: batches are written in order

	mu      sync.Mutex
	pending []storage.SMTPSession
	index   map[string]int // session id -> index in pending
	dropped int            // records dropped since the last write, for its log line
	full    chan struct{}  // a batch is ready: write it now

	stop chan struct{}
	done chan struct{}
}

// NewSessionWriter returns a SessionWriter over store, running until
// Shutdown. A nil log discards log output.
func NewSessionWriter(store SessionStore, log *slog.Logger) *SessionWriter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &SessionWriter{store: store, log: log, index: make(map[string]int), full: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Open implements SessionLog.
func (w *SessionWriter) Open(rec storage.SMTPSession) { w.put(rec) }

// Close implements SessionLog.
func (w *SessionWriter) Close(rec storage.SMTPSession, delivered bool) {
	if !delivered {
		w.put(rec)
		return
	}
	// Written with the delivery: its open record, if it waits, need not
	// be.
	w.mu.Lock()
	defer w.mu.Unlock()
	if i, ok := w.index[rec.ID]; ok {
		last := len(w.pending) - 1
		w.pending[i] = w.pending[last]
		w.index[w.pending[i].ID] = i
		w.pending = w.pending[:last]
		delete(w.index, rec.ID)
	}
}

// put adds rec to what waits, in place of an earlier record of its
// session unless that one is ended and rec is not.
func (w *SessionWriter) put(rec storage.SMTPSession) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i, ok := w.index[rec.ID]; ok {
		if rec.EndedAt != nil || w.pending[i].EndedAt == nil {
			w.pending[i] = rec
		}
		return
	}
	if len(w.pending) >= writerMaxPending {
		w.dropped++
		return
	}
	w.index[rec.ID] = len(w.pending)
	w.pending = append(w.pending, rec)
	if len(w.pending) == writerBatch {
		select {
		case w.full <- struct{}{}:
		default:
		}
	}
}

func (w *SessionWriter) run() {
	defer close(w.done)
	t := time.NewTicker(writerEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.full:
		}
		ctx, cancel := context.WithTimeout(context.Background(), writerTimeout)
		w.Flush(ctx)
		cancel()
	}
}

// Flush writes what waits now, and returns the store's error. Tests call
// it to read what the log holds at a point of a session.
func (w *SessionWriter) Flush(ctx context.Context) error {
	w.writing.Lock()
	defer w.writing.Unlock()
	w.mu.Lock()
	batch, dropped := w.pending, w.dropped
	w.pending, w.dropped = nil, 0
	clear(w.index)
	w.mu.Unlock()
	if dropped > 0 {
		w.log.Warn("session log records dropped: the store is slower than the sessions", "dropped", dropped)
	}
	if len(batch) == 0 {
		return nil
	}
	err := w.store.WriteSMTPSessions(ctx, batch)
	if err != nil {
		w.log.Warn("session log records lost: the store failed", "records", len(batch), "err", err)
	}
	return err
}

// Shutdown stops the writer once what waits is written, or ctx is done.
// Call it after the SMTP server's Shutdown, which ends the sessions, and
// before the store closes.
func (w *SessionWriter) Shutdown(ctx context.Context) error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	return w.Flush(ctx)
}
