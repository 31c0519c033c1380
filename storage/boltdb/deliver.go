package boltdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"burner/storage"
	"burner/storage/internal/commit"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// Deliver stores msg once for each recipient address in to, in one durable
// transaction, and returns the stored emails in the order of to. Each address's
// local part must pass ValidLocalPart. When Deliver returns nil the emails are
// on disk (fsynced); concurrent calls share one commit. An inbox past
// Options.Retention.MaxPerInbox loses its oldest emails in the same
// transaction. Deliver returns an error wrapping ErrFull when the file is at
// its cap.
func (db *DB) Deliver(ctx context.Context, msg *storage.Message, to []string) ([]storage.Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(to) == 0 {
		return nil, errors.New("deliver: no recipients")
	}
	if err := db.checkRoom(len(msg.Raw)); err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	d := &delivery{
		received: record.Milli(db.now()),
		inboxes:  make([][]byte, len(to)),
		times:    make([]time.Time, len(to)),
		records:  make([][]byte, len(to)),
		ids:      make([]uuid.UUID, len(to)),
		to:       to,
	}
	emails := make([]storage.Email, len(to))
	locals := make([]string, len(to))
	for i, addr := range to {
		local := storage.LocalPart(addr)
		if !storage.StorableLocalPart(local) {
			return nil, fmt.Errorf("deliver to %q: invalid local part", addr)
		}
		locals[i] = local
		d.inboxes[i] = inboxName(local)
		d.ids[i] = record.NewID()
		emails[i] = msg.Email(d.ids[i].String(), addr, d.received)
	}
	// Everything that costs CPU happens here, in the caller's goroutine,
	// so that concurrent deliveries encode in parallel and the commit they
	// share only writes.
	var sig []byte
	d.content, d.raw, sig = encodeContent(len(to), msg)
	if msg.Auth != nil {
		d.auth = record.EncodeAuth(*msg.Auth)
	}
	for i := range emails {
		// The content key is known only in the transaction, which
		// writes it into the record.
		d.records[i] = encodeEmail(&emails[i], d.ids[i], make([]byte, 8), sig)
	}
	db.planEvents(d, msg, locals)
	if msg.Session != nil {
		// spec §13.1: the session's record goes in the delivery's commit,
		// naming the emails it stores.
		s := *msg.Session
		s.Emails = make([]string, len(emails))
		for i := range emails {
			s.Emails[i] = emails[i].ID
		}
		e, err := newSMTPLogEntry(&s)
		if err != nil {
			return nil, fmt.Errorf("deliver: %w", err)
		}
		d.session = &e
	}
	db.commits.Do(d, db.commitBatch)
	db.writes.Observe(d.err, db.now())
	if err := d.err; err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	for i, inbox := range d.inboxes {
		emails[i].ReceivedAt = d.times[i]
		db.changes.Notify(string(inbox))
	}
	db.notifyEvents(d.events)
	return emails, nil
}

// delivery is one Deliver's share of a group commit: what it writes, and
// how it learns the outcome.
type delivery struct {
	received time.Time
	times    []time.Time // the receivedAt of each email, set by put
	inboxes  [][]byte
	records  [][]byte // email records, their content keys to be filled in
	ids      []uuid.UUID
	content  []byte
	raw      []byte
	to       []string      // the recipient addresses
	events   []hookEvent   // webhook events (outbox.go), one per email and covering hook
	eventMsg []byte        // what the events share, encoded
	session  *smtpLogEntry // the record of the SMTP session that delivers it; nil when none
	auth     []byte        // the message's authentication record (auth.go), or nil

	err error // the outcome of its commit, set by commitBatch
}

// put writes d in tx. It may run again in a new transaction when the one
// it shared failed, so it only writes values computed before and sequences
// that a rollback resets.
func (db *DB) put(tx *bolt.Tx, d *delivery) error {
	maxPerInbox := db.retention.MaxPerInbox
	contents, raw, eb := tx.Bucket(bucketContents), tx.Bucket(bucketRaw), tx.Bucket(bucketEmails)
	cseq, err := contents.NextSequence()
	if err != nil {
		return err
	}
	ckey := be64(cseq)
	if err := contents.Put(ckey, d.content); err != nil {
		return err
	}
	if err := raw.Put(ckey, d.raw); err != nil {
		return err
	}
	if d.auth != nil {
		if err := tx.Bucket(bucketAuth).Put(ckey, d.auth); err != nil {
			return err
		}
	}
	inboxes := tx.Bucket(bucketInboxes)
	for i, rec := range d.records {
		seq, err := eb.NextSequence()
		if err != nil {
			return err
		}
		copy(rec[18:26], ckey)
		// spec §3: receivedAt strictly increases within an inbox, in
		// commit order, which is decided here, in the transaction.
		// The inbox's record holds its newest email's time (addCount), and
		// sees an earlier delivery of this commit to the same inbox.
		d.times[i] = d.received
		n, newest, _ := decodeInbox(inboxes.Get(d.inboxes[i]))
		if n > 0 {
			if t := record.FromMilli(int64(newest)); !d.received.After(t) {
				d.times[i] = t.Add(time.Millisecond)
			}
		}
		key := emailKey(d.inboxes[i], d.times[i], seq)
		if err := eb.Put(key, rec); err != nil {
			return err
		}
		if err := tx.Bucket(bucketIDs).Put(d.ids[i][:], key); err != nil {
			return err
		}
		// One more email, and the newest: what addCount would write,
		// from the value read above.
		if err := inboxes.Put(d.inboxes[i], encodeInbox(n+1, keyMilli(key))); err != nil {
			return err
		}
		if maxPerInbox > 0 {
			if _, err := trimInbox(tx, d.inboxes[i], n+1, maxPerInbox, -1); err != nil {
				return err
			}
		}
	}
	// spec §9: the events go in the emails' own commit, so that a crash
	// after the 250 cannot lose them.
	if len(d.events) > 0 {
		if err := d.putEvents(tx); err != nil {
			return err
		}
	}
	if d.session != nil {
		if err := db.putSMTPSession(tx, *d.session); err != nil {
			return err
		}
		// The cap holds at every commit; under it, this costs no read.
		// A few at a time: after a cap was lowered, the sweeper deletes
		// the many.
		if _, err := db.trimSMTPLog(tx, db.retention.MaxSessions, trimAtDelivery); err != nil {
			return err
		}
	}
	return nil
}

// trimAtDelivery bounds the records of the session log a delivery
// deletes to hold the cap.
const trimAtDelivery = 8

// maxBatch bounds the deliveries of one transaction (commit.Group).
const maxBatch = 256

// commitBatch writes batch and the verdicts waiting (auth.go) in one
// transaction, and sets the err of each. When that transaction fails,
// each is retried alone, so that one that cannot be stored does not fail
// the others.
func (db *DB) commitBatch(batch []*delivery) {
	verdicts := db.verdicts.Take()
	defer func() {
		for _, v := range verdicts {
			v.Done()
		}
	}()
	if len(batch)+len(verdicts) == 0 {
		return // flushVerdicts', whose verdicts a delivery's commit took
	}
	fail := errors.New("commit abandoned")
	for _, d := range batch {
		d.err = fail // until the commit says otherwise, even after a panic
	}
	update := func(ds []*delivery, vs []*commit.Verdict) error {
		var putErr error
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			// Content keys only grow, so a page that splits is never
			// written again and can be full. An inbox's email keys grow
			// too, but 100 inboxes append in 100 places: measured, 0.75
			// packed them as tightly as 1.0, with a fifth of the branch
			// pages. Ids are of version 7 (record.NewID), which grow
			// too, but not strictly within a commit: deliveries queue in
			// about the order their ids were made.
			tx.Bucket(bucketContents).FillPercent = 1.0
			tx.Bucket(bucketIDs).FillPercent = 0.9
			tx.Bucket(bucketRaw).FillPercent = 1.0
			tx.Bucket(bucketEmails).FillPercent = 0.75
			// Sessions are written about in the order they started.
			tx.Bucket(bucketSMTPLog).FillPercent = 0.9
			for _, d := range ds {
				if putErr = db.put(tx, d); putErr != nil {
					return putErr
				}
			}
			for _, v := range vs {
				if putErr = putVerdict(tx, v); putErr != nil {
					return putErr
				}
			}
			return nil
		})
		if err != nil && putErr == nil && !errors.Is(err, bolt.ErrDatabaseNotOpen) {
			// The writes to the file failed, not the mail: a disk
			// that filled up although checkRoom counted free pages
			// enough, or an I/O error (spec §5: /healthz tells).
			err = fmt.Errorf("%w: %w", storage.ErrWriteFailed, err)
		}
		return err
	}
	err := update(batch, verdicts)
	if err == nil || len(batch)+len(verdicts) == 1 {
		for _, d := range batch {
			d.err = err
		}
		for _, v := range verdicts {
			v.Err = err
		}
		return
	}
	for _, d := range batch {
		d.err = update([]*delivery{d}, nil)
	}
	for _, v := range verdicts {
		v.Err = update(nil, []*commit.Verdict{v})
	}
}

// checkRoom returns an error wrapping ErrFull when storing n more bytes would
// take the data file past Options.Retention.MaxBytes, or need more than the
// disk has left: the mail is then refused for want of space (452) before any
// work, rather than failing at the commit. Pages freed by deletions are reused,
// so what counts is the file's size less its free pages, and on the disk, its
// free space plus those pages. /healthz makes the same check (CheckWritable).
func (db *DB) checkRoom(n int) error {
	var size int64
	if err := db.bolt.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return err
	}
	reusable := int64(db.bolt.Stats().FreeAlloc)
	if db.retention.MaxBytes > 0 && size-reusable+int64(n) > db.retention.MaxBytes {
		return storage.ErrFull
	}
	if disk, ok := diskFree(db.bolt.Path()); ok && disk+reusable < int64(n)+diskReserve {
		return fmt.Errorf("%d bytes left on the disk: %w", disk, storage.ErrFull)
	}
	return nil
}

// diskReserve is the disk space a commit may need beyond the message's
// own bytes: the branch pages, freelist and meta page that it rewrites.
const diskReserve = 1 << 20
