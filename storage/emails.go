package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// Deliver stores msg once for each recipient address in to, in one durable
// transaction, and returns the stored emails in the order of to. Each
// address's local part must pass ValidLocalPart. When Deliver returns nil the
// emails are on disk (fsynced); concurrent calls share one commit. An inbox
// past Options.MaxPerInbox loses its oldest emails in the same transaction.
// Deliver returns an error wrapping ErrFull when the file is at its cap.
func (db *DB) Deliver(ctx context.Context, msg *Message, to []string) ([]Email, error) {
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
		received: db.now().UTC().Truncate(time.Millisecond),
		inboxes:  make([][]byte, len(to)),
		records:  make([][]byte, len(to)),
		ids:      make([]uuid.UUID, len(to)),
		done:     make(chan bool, 1),
	}
	emails := make([]Email, len(to))
	for i, addr := range to {
		local := LocalPart(addr)
		if !ValidLocalPart(local) || len(local) > MaxLocalPart {
			return nil, fmt.Errorf("deliver to %q: invalid local part", addr)
		}
		d.inboxes[i] = inboxName(local)
		d.ids[i] = uuid.New()
		emails[i] = Email{
			ID:         d.ids[i].String(),
			To:         addr,
			From:       msg.From,
			FromName:   msg.FromName,
			Subject:    msg.Subject,
			Body:       msg.Body,
			ReceivedAt: d.received,
		}
		// The content key is known only in the transaction, which
		// writes it into the record.
		d.records[i] = encodeEmail(&emails[i], d.ids[i], make([]byte, 8))
	}
	// Everything that costs CPU happens here, in the caller's goroutine,
	// so that concurrent deliveries encode in parallel and the commit they
	// share only writes.
	d.content, d.raw = encodeContent(len(to), msg)
	if err := db.commits.commit(db, d); err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	for _, inbox := range d.inboxes {
		db.notify(string(inbox))
	}
	return emails, nil
}

// delivery is one Deliver's share of a group commit: what it writes, and
// how it learns the outcome.
type delivery struct {
	received time.Time
	inboxes  [][]byte
	records  [][]byte // email records, their content keys to be filled in
	ids      []uuid.UUID
	content  []byte
	raw      []byte

	err  error
	done chan bool // receives false when err is set, true to lead the next commit
}

// put writes d in tx. It may run again in a new transaction when the one
// it shared failed, so it only writes values computed before and sequences
// that a rollback resets.
func (d *delivery) put(tx *bolt.Tx, maxPerInbox int) error {
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
	for i, rec := range d.records {
		seq, err := eb.NextSequence()
		if err != nil {
			return err
		}
		copy(rec[18:26], ckey)
		key := emailKey(d.inboxes[i], d.received, seq)
		if err := eb.Put(key, rec); err != nil {
			return err
		}
		if err := tx.Bucket(bucketIDs).Put(d.ids[i][:], key); err != nil {
			return err
		}
		if err := addCount(tx, d.inboxes[i], 1); err != nil {
			return err
		}
	}
	if maxPerInbox > 0 {
		for _, inbox := range d.inboxes {
			if _, err := trimInbox(tx, inbox, maxPerInbox, -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// committer is the group commit of Deliver (SPEC §2: 250 only after the
// fsync, and an fsync per message would cap ingest at the disk's sync
// rate). A delivery that finds no commit running leads one: it commits
// every delivery queued, its own included, in one transaction. Deliveries
// that arrive meanwhile queue, and the first of them leads the next commit
// once this one is on disk. Unlike bbolt's DB.Batch, which waits up to
// MaxBatchDelay (10 ms) for company, nobody waits for anything but the
// commit in progress: alone, a delivery commits at once; under load, a
// commit takes all that queued while the last one synced.
type committer struct {
	mu      sync.Mutex
	queue   []*delivery
	leading bool // a commit is running, and its leader will hand on
}

// maxBatch bounds the deliveries of one transaction.
const maxBatch = 256

// commit commits d, alone or with others, and returns its outcome.
func (c *committer) commit(db *DB, d *delivery) error {
	c.mu.Lock()
	c.queue = append(c.queue, d)
	if c.leading {
		c.mu.Unlock()
		if lead := <-d.done; !lead {
			return d.err
		}
		c.mu.Lock()
	}
	c.leading = true
	n := min(len(c.queue), maxBatch)
	batch := c.queue[:n:n]
	c.queue = append([]*delivery(nil), c.queue[n:]...)
	c.mu.Unlock()

	defer func() {
		// Hand on, even after a panic: the queue must not wait for a
		// leader that is gone.
		c.mu.Lock()
		if len(c.queue) > 0 {
			c.queue[0].done <- true
		} else {
			c.leading = false
		}
		c.mu.Unlock()
		for _, o := range batch {
			if o != d {
				o.done <- false
			}
		}
	}()
	db.commitBatch(batch)
	return d.err
}

// commitBatch writes batch in one transaction and sets the err of each
// delivery. When that transaction fails, each delivery is retried alone,
// so that one that cannot be stored does not fail the others.
func (db *DB) commitBatch(batch []*delivery) {
	fail := errors.New("commit abandoned")
	for _, d := range batch {
		d.err = fail // until the commit says otherwise, even after a panic
	}
	update := func(ds []*delivery) error {
		return db.bolt.Update(func(tx *bolt.Tx) error {
			// Content keys only grow, so a page that splits is never
			// written again and can be full. An inbox's email keys grow
			// too, but 100 inboxes append in 100 places: measured, 0.75
			// packed them as tightly as 1.0, with a fifth of the branch
			// pages. bbolt's default, half, suits the random keys of ids.
			tx.Bucket(bucketContents).FillPercent = 1.0
			tx.Bucket(bucketRaw).FillPercent = 1.0
			tx.Bucket(bucketEmails).FillPercent = 0.75
			for _, d := range ds {
				if err := d.put(tx, db.maxPerInbox); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := update(batch)
	if err == nil || len(batch) == 1 {
		for _, d := range batch {
			d.err = err
		}
		return
	}
	for _, d := range batch {
		d.err = update([]*delivery{d})
	}
}

// checkRoom returns an error wrapping ErrFull when storing n more bytes
// would take the data file past Options.MaxBytes, or need more than the
// disk has left: the mail is then refused for want of space (452) before
// any work, rather than failing at the commit. Pages freed by deletions
// are reused, so what counts is the file's size less its free pages, and
// on the disk, its free space plus those pages. /healthz makes the same
// check (CheckWritable).
func (db *DB) checkRoom(n int) error {
	var size int64
	if err := db.bolt.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return err
	}
	reusable := int64(db.bolt.Stats().FreeAlloc)
	if db.maxBytes > 0 && size-reusable+int64(n) > db.maxBytes {
		return ErrFull
	}
	if disk, ok := diskFree(db.bolt.Path()); ok && disk+reusable < int64(n)+diskReserve {
		return fmt.Errorf("%d bytes left on the disk: %w", disk, ErrFull)
	}
	return nil
}

// diskReserve is the disk space a commit may need beyond the message's
// own bytes: the branch pages, freelist and meta page that it rewrites.
const diskReserve = 1 << 20

// List returns the emails of q.LocalPart that match q, newest first (equal
// times in reverse arrival order). With q.After it returns ErrNotFound when
// that email does not exist (or is in another inbox).
func (db *DB) List(ctx context.Context, q Query) ([]Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := newMatcher(q)
	var out []Email
	err := db.bolt.View(func(tx *bolt.Tx) error {
		prefix := inboxPrefix(q.LocalPart)
		after, err := inboxKey(tx, prefix, q.After) // keys at or before it are not listed
		if err != nil {
			return err
		}
		start, err := inboxKey(tx, prefix, q.Before) // the walk starts below it
		if err != nil {
			return err
		}
		if start == nil {
			start = prefixEnd(prefix)
		}
		w := &walk{
			emails:   tx.Bucket(bucketEmails).Cursor(),
			contents: tx.Bucket(bucketContents).Cursor(),
			prefix:   prefix,
			after:    after,
			since:    q.Since,
			m:        m,
		}
		w.k, w.v = w.emails.Seek(start)
		if w.k == nil {
			w.k, w.v = w.emails.Last()
		} else {
			w.k, w.v = w.emails.Prev()
		}
		workers := runtime.GOMAXPROCS(0)
		if m.readsText() && workers > 1 && inboxCount(tx, prefix[:len(prefix)-1]) >= parallelScan {
			out, err = w.parallel(q, workers)
		} else {
			out, err = w.serial(q)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", q.LocalPart, err)
	}
	return out, nil
}

// parallelScan is the size of inbox from which List decodes and matches
// the text of its emails on all cores: about 1 µs an email (docs/performance.md),
// most of it waiting for memory, so that two cores halve the time of a body
// filter or a search over 10,000 emails.
const parallelScan = 2000

// walk is one List's walk over an inbox, newest first.
type walk struct {
	emails, contents *bolt.Cursor
	prefix, after    []byte
	since            time.Time
	m                *matcher
	k, v             []byte // the email at hand; k is nil past the last
}

// candidate is an email that its record alone does not rule out: its key
// and record, and its content record, all valid in the transaction.
type candidate struct {
	key, rec, content []byte
}

// next returns the next candidate, or ok false at the end of the walk.
func (w *walk) next() (c candidate, ok bool, err error) {
	for ; w.k != nil && bytes.HasPrefix(w.k, w.prefix); w.k, w.v = w.emails.Prev() {
		k, v := w.k, w.v
		if w.after != nil && bytes.Compare(k, w.after) <= 0 {
			break
		}
		if !w.since.IsZero() && !keyTime(k).After(w.since) {
			break // keys only get older from here
		}
		ev, err := viewEmail(v)
		if err != nil || len(k) < 17 {
			return candidate{}, false, fmt.Errorf("email %x: %w", k, errCorrupt)
		}
		if !w.m.matchSubject(&ev) { // the rest is the evaluator's
			continue
		}
		rec, err := w.content(ev.ckey)
		if err != nil {
			return candidate{}, false, fmt.Errorf("email %x: %w", ev.id, err)
		}
		w.k, w.v = w.emails.Prev()
		return candidate{key: k, rec: v, content: rec}, true, nil
	}
	w.k = nil
	return candidate{}, false, nil
}

// content returns the content record of ckey. An inbox's emails were
// mostly stored in the order of their content keys, so walking an inbox
// backwards mostly wants the record before the last one: a step of the
// cursor, cheaper than a seek from the root.
func (w *walk) content(ckey []byte) ([]byte, error) {
	k, v := w.contents.Prev()
	if !bytes.Equal(k, ckey) {
		k, v = w.contents.Seek(ckey)
	}
	if !bytes.Equal(k, ckey) {
		return nil, errCorrupt
	}
	return v, nil
}

// serial lists the walk's emails in this goroutine.
func (w *walk) serial(q Query) ([]Email, error) {
	ev := newEvaluator(w.m)
	ev.noBody = q.NoBody
	defer ev.release()
	var out []Email
	for q.Limit <= 0 || len(out) < q.Limit {
		c, ok, err := w.next()
		if err != nil || !ok {
			return out, err
		}
		e, in, err := ev.eval(c)
		if err != nil {
			return out, err
		}
		if in {
			out = append(out, e)
		}
	}
	return out, nil
}

// parallel lists the walk's emails with workers goroutines that evaluate
// batches of candidates, while this one walks: the cursors stay in one
// goroutine, and what the workers read (the records the walk found) stays
// valid until the transaction ends, after they are done.
func (w *walk) parallel(q Query, workers int) ([]Email, error) {
	type batch struct {
		cands  []candidate
		emails []Email
		err    error
		done   chan struct{}
	}
	jobs := make(chan *batch)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := newEvaluator(newMatcher(q))
			ev.noBody = q.NoBody
			defer ev.release()
			for b := range jobs {
				func() {
					defer close(b.done)
					defer func() {
						// No handler recovers a panic of this goroutine, and it
						// would end the process: make it this List's error.
						if p := recover(); p != nil {
							b.err = fmt.Errorf("panic matching emails: %v", p)
						}
					}()
					for _, c := range b.cands {
						e, in, err := ev.eval(c)
						if err != nil {
							b.err = err
							return
						}
						if in {
							b.emails = append(b.emails, e)
						}
					}
				}()
			}
		}()
	}
	defer wg.Wait()
	defer close(jobs)

	var (
		out     []Email
		pending []*batch
		size    = 16 // batches grow, so that a list that fills early does little extra
	)
	full := func() bool { return q.Limit > 0 && len(out) >= q.Limit }
	collect := func() error { // the oldest batch, in order
		b := pending[0]
		pending = pending[1:]
		<-b.done
		for _, e := range b.emails {
			if !full() {
				out = append(out, e)
			}
		}
		return b.err
	}
	for !full() {
		b := &batch{done: make(chan struct{})}
		for len(b.cands) < size {
			c, ok, err := w.next()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			b.cands = append(b.cands, c)
		}
		if len(b.cands) == 0 {
			break
		}
		size = min(2*size, 512)
		jobs <- b
		pending = append(pending, b)
		if len(pending) > 2*workers {
			if err := collect(); err != nil {
				return nil, err
			}
		}
	}
	for len(pending) > 0 {
		if err := collect(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// evaluator decodes and matches candidates, in one goroutine at a time.
type evaluator struct {
	m      *matcher
	buf    *[]byte // what content records are decoded into
	noBody bool    // Query.NoBody: the body is neither decoded nor returned
}

// decodeBuffers holds the buffers evaluators decode into.
var decodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

func newEvaluator(m *matcher) *evaluator {
	return &evaluator{m: m, buf: decodeBuffers.Get().(*[]byte)}
}

func (ev *evaluator) release() {
	if cap(*ev.buf) <= 64<<10 { // a huge message's buffer is not worth keeping
		decodeBuffers.Put(ev.buf)
	}
}

// eval returns the email of c, and whether it matches. A body filter or a
// search decodes the text alone until it matches; the body is decoded
// once the email is in, for it is part of the answer, unless the query
// asks for no body (Query.NoBody).
func (ev *evaluator) eval(c candidate) (Email, bool, error) {
	v, err := viewEmail(c.rec)
	if err != nil {
		return Email{}, false, err
	}
	ok, needContent := ev.m.matchEmail(&v) // again: it folds the fields the terms look at
	if !ok {
		return Email{}, false, nil
	}
	if ev.noBody && !needContent {
		// The record decided, and no body is wanted: the content, often
		// most of an email's bytes, is not decoded at all.
		return v.email(c.key), true, nil
	}
	ct, buf, err := decodeText(c.content, *ev.buf)
	*ev.buf = buf
	if err == nil && ev.m.header != nil {
		*ev.buf, err = ct.decodeSection(*ev.buf)
	}
	if err != nil {
		return Email{}, false, fmt.Errorf("email %x: %w", v.id, err)
	}
	if needContent && !ev.m.matchContent(&ct) {
		return Email{}, false, nil
	}
	if ev.noBody {
		return v.email(c.key), true, nil
	}
	if *ev.buf, err = ct.decodeSection(*ev.buf); err != nil {
		return Email{}, false, fmt.Errorf("email %x: %w", v.id, err)
	}
	e := v.email(c.key)
	e.Body = bodyString(ct.body)
	return e, true, nil
}

// inboxKey returns the emails key of the email with id, which must be in
// the inbox of prefix; nil for an empty id; ErrNotFound when there is none.
func inboxKey(tx *bolt.Tx, prefix []byte, id string) ([]byte, error) {
	if id == "" {
		return nil, nil
	}
	uid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	key := tx.Bucket(bucketIDs).Get(uid[:])
	if key == nil || !bytes.HasPrefix(key, prefix) {
		return nil, ErrNotFound
	}
	return key, nil
}

// Email returns the email with id, or ErrNotFound (also for an id that is
// not a UUID).
func (db *DB) Email(ctx context.Context, id string) (Email, error) {
	var e Email
	err := db.view(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		v, err := viewEmail(rec)
		if err != nil {
			return err
		}
		ct, err := decodeContent(tx.Bucket(bucketContents).Get(v.ckey))
		if err != nil {
			return err
		}
		e = v.email(key)
		e.Body = bodyString(ct.body)
		return nil
	})
	if err != nil {
		return Email{}, fmt.Errorf("email %s: %w", id, err)
	}
	return e, nil
}

// Raw returns the message with id as it was received, or ErrNotFound.
func (db *DB) Raw(ctx context.Context, id string) ([]byte, error) {
	var raw []byte
	err := db.viewCold(ctx, id, func(c cold) {
		raw = bytes.Clone(c.raw) // an old record's points into the transaction
	})
	if err != nil {
		return nil, fmt.Errorf("raw %s: %w", id, err)
	}
	return raw, nil
}

// Content returns the plain text and links of the email with id, or
// ErrNotFound.
func (db *DB) Content(ctx context.Context, id string) (Content, error) {
	var out Content
	err := db.viewCold(ctx, id, func(c cold) {
		out.Plain, out.Links = string(c.plain), decodeLinks(c.links)
	})
	if err != nil {
		return Content{}, fmt.Errorf("content %s: %w", id, err)
	}
	return out, nil
}

// viewCold calls fn, in a read transaction, with the cold section of the
// message of email id.
func (db *DB) viewCold(ctx context.Context, id string, fn func(cold)) error {
	return db.view(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		ckey := recordContentKey(rec)
		ct, err := decodeContent(tx.Bucket(bucketContents).Get(ckey))
		if err != nil {
			return err
		}
		c, err := decodeCold(&ct, tx.Bucket(bucketRaw).Get(ckey))
		if err != nil {
			return err
		}
		fn(c)
		return nil
	})
}

// MarkRead sets the read flag of the email with id, or returns ErrNotFound.
func (db *DB) MarkRead(ctx context.Context, id string) error {
	err := db.update(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		if rec[1]&flagRead != 0 {
			return nil
		}
		updated := bytes.Clone(rec)
		updated[1] |= flagRead
		return tx.Bucket(bucketEmails).Put(key, updated)
	})
	if err != nil {
		return fmt.Errorf("mark read %s: %w", id, err)
	}
	return nil
}

// Delete removes the email with id, or returns ErrNotFound. Other
// recipients' copies of the same message are not touched.
func (db *DB) Delete(ctx context.Context, id string) error {
	err := db.update(ctx, id, func(tx *bolt.Tx, key, rec []byte) error {
		return deleteEmail(tx, key, rec)
	})
	if err != nil {
		return fmt.Errorf("delete email %s: %w", id, err)
	}
	return nil
}

// smallTx bounds the deletions of one transaction of a long job (Clear, the
// sweeper), so that it never holds the write lock long enough to stall SMTP
// ingest.
const smallTx = 256

// Clear deletes every email of the inbox localPart and returns how many it
// deleted. It works in small transactions and stops early when ctx is done.
func (db *DB) Clear(ctx context.Context, localPart string) (int, error) {
	inbox := inboxName(localPart)
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n := 0
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			var err error
			n, err = trimInbox(tx, inbox, 0, smallTx)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("clear %s: %w", localPart, err)
		}
		total += n
		if n < smallTx {
			return total, nil
		}
	}
}

// trimInbox deletes the oldest emails of inbox until at most keep remain,
// or until it has deleted most (when most >= 0), and returns how many it
// deleted.
func trimInbox(tx *bolt.Tx, inbox []byte, keep, most int) (int, error) {
	over := inboxCount(tx, inbox) - keep
	if most >= 0 && over > most {
		over = most
	}
	if over <= 0 {
		return 0, nil
	}
	prefix := append(bytes.Clone(inbox), 0)
	c := tx.Bucket(bucketEmails).Cursor()
	// Deleting while a cursor walks the bucket can skip keys, so collect
	// first, then delete.
	var keys, recs [][]byte
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(keys) < over; k, v = c.Next() {
		keys, recs = append(keys, bytes.Clone(k)), append(recs, bytes.Clone(v))
	}
	for i := range keys {
		if err := deleteEmail(tx, keys[i], recs[i]); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

// deleteEmail removes one email, counts it out of its inbox and drops its
// reference to its content.
func deleteEmail(tx *bolt.Tx, key, rec []byte) error {
	if len(rec) < emailFixedLen {
		return errCorrupt
	}
	if err := tx.Bucket(bucketEmails).Delete(key); err != nil {
		return err
	}
	if err := tx.Bucket(bucketIDs).Delete(recordID(rec)); err != nil {
		return err
	}
	if err := addCount(tx, keyInbox(key), -1); err != nil {
		return err
	}
	ckey := recordContentKey(rec)
	contents := tx.Bucket(bucketContents)
	c := contents.Get(ckey)
	refs, n := contentRefs(c)
	if n <= 0 {
		return errCorrupt
	}
	if refs <= 1 {
		if err := contents.Delete(ckey); err != nil {
			return err
		}
		if err := tx.Bucket(bucketParts).Delete(ckey); err != nil {
			return err
		}
		return tx.Bucket(bucketRaw).Delete(ckey)
	}
	updated := binary.AppendUvarint(nil, refs-1)
	return contents.Put(ckey, append(updated, c[n:]...))
}

// inboxCount returns the number of emails in inbox.
func inboxCount(tx *bolt.Tx, inbox []byte) int {
	v := tx.Bucket(bucketInboxes).Get(inbox)
	if len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(v))
}

// addCount adds delta to the count of inbox, forgetting an inbox at zero.
func addCount(tx *bolt.Tx, inbox []byte, delta int) error {
	n := inboxCount(tx, inbox) + delta
	b := tx.Bucket(bucketInboxes)
	if n <= 0 {
		return b.Delete(inbox)
	}
	return b.Put(bytes.Clone(inbox), be64(uint64(n)))
}

// view runs fn in a read transaction with the key and record of email id.
func (db *DB) view(ctx context.Context, id string, fn func(tx *bolt.Tx, key, rec []byte) error) error {
	return db.withEmail(ctx, db.bolt.View, id, fn)
}

// update runs fn in a write transaction with the key and record of email id.
func (db *DB) update(ctx context.Context, id string, fn func(tx *bolt.Tx, key, rec []byte) error) error {
	return db.withEmail(ctx, db.bolt.Update, id, fn)
}

func (db *DB) withEmail(ctx context.Context, run func(func(*bolt.Tx) error) error, id string, fn func(tx *bolt.Tx, key, rec []byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	uid, err := parseID(id)
	if err != nil {
		return err
	}
	return run(func(tx *bolt.Tx) error {
		key := tx.Bucket(bucketIDs).Get(uid[:])
		if key == nil {
			return ErrNotFound
		}
		rec := tx.Bucket(bucketEmails).Get(key)
		if rec == nil {
			return errCorrupt
		}
		return fn(tx, key, rec)
	})
}

// parseID parses an email id, or returns ErrNotFound. Only the canonical
// 36-character form names an email; uuid.Parse would also take urn:uuid:,
// braces and bare hex.
func parseID(id string) (uuid.UUID, error) {
	if len(id) != 36 {
		return uuid.UUID{}, ErrNotFound
	}
	uid, err := uuid.Parse(id)
	if err != nil {
		return uuid.UUID{}, ErrNotFound
	}
	return uid, nil
}
