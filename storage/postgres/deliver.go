package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Deliver stores msg once for each recipient address in to, in one transaction,
// and returns the stored emails in the order of to. It returns only after
// COMMIT has returned (spec §10: what that survives is the database's
// synchronous_commit); concurrent calls share one commit, and a commit that
// fails fails each of them. An inbox past Options.Retention.MaxPerInbox loses
// its oldest emails in the same transaction. Deliver returns an error wrapping
// ErrFull when the database is at Options.Retention.MaxBytes, and
// storage.ErrUnavailable when it cannot be reached.
func (db *DB) Deliver(ctx context.Context, msg *storage.Message, to []string) ([]storage.Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(to) == 0 {
		return nil, errors.New("deliver: no recipients")
	}
	d := &delivery{
		received: record.Milli(db.now()).UnixMilli(),
		inboxes:  make([]string, len(to)),
		times:    make([]int64, len(to)),
		ids:      make([]uuid.UUID, len(to)),
		to:       make([][]byte, len(to)),
	}
	for i, addr := range to {
		local := storage.LocalPart(addr)
		if !storage.StorableLocalPart(local) {
			return nil, fmt.Errorf("deliver to %q: invalid local part", addr)
		}
		d.inboxes[i] = storage.InboxName(local)
		d.ids[i] = record.NewID()
		d.to[i] = []byte(addr)
	}
	if err := db.checkRoom(ctx, len(msg.Raw), false); err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	// What costs CPU happens here, in the caller's goroutine, so that
	// concurrent deliveries encode in parallel and their commit only writes.
	d.row = db.messageRow(d.ids[0], msg)
	if msg.Auth != nil {
		d.auth = record.EncodeAuth(*msg.Auth)
	}
	db.planEvents(d, msg, to)
	if msg.Session != nil {
		// spec §13.1: the session's record goes in the delivery's
		// transaction, naming the emails it stores.
		s := *msg.Session
		s.Emails = make([]string, len(to))
		for i, id := range d.ids {
			s.Emails[i] = id.String()
		}
		row, err := newSMTPLogRow(&s)
		if err != nil {
			return nil, fmt.Errorf("deliver: %w", err)
		}
		d.session = &row
	}
	// The leader's context must not cancel the others' commit.
	db.commits.Do(d, func(batch []*delivery) { db.commitBatch(context.WithoutCancel(ctx), batch) })
	if err := d.err; err != nil {
		err = db.fail(err)
		db.writes.Observe(err, db.now())
		return nil, fmt.Errorf("deliver: %w", err)
	}
	db.writes.Observe(nil, db.now())
	emails := make([]storage.Email, len(to))
	for i, addr := range to {
		emails[i] = msg.Email(d.ids[i].String(), addr, record.FromMilli(d.times[i]))
		db.notify(d.inboxes[i])
	}
	db.notifyEvents(d.events)
	return emails, nil
}

// messageRow is a row of messages: its id, then its bytea columns in
// the order of messageColumns.
type messageRow struct {
	id    uuid.UUID
	bytea [11][]byte
	text  *string // search_text, when the search text fits in text; then search is nil
	sig   []byte  // the signature its emails hold (emails.sig)
}

const messageColumns = "id, from_addr, from_name, subject, body, fsubject, fsender, search, headers, plain, links, raw, search_text"

func (db *DB) messageRow(id uuid.UUID, msg *storage.Message) messageRow {
	var fsubject []byte
	if msg.Subject != nil {
		fsubject = match.AppendFold(make([]byte, 0, len(*msg.Subject)), *msg.Subject)
	}
	search := match.AppendSearchText(make([]byte, 0, len(msg.Text)), msg.Text)
	sig := signature(search, msg)
	var text *string
	if utf8.Valid(search) && bytes.IndexByte(search, 0) < 0 {
		s := string(search)
		text, search = &s, nil
	}
	return messageRow{id: id, text: text, sig: sig, bytea: [11][]byte{
		[]byte(msg.From),
		[]byte(msg.FromName),
		bytesOf(msg.Subject),
		bytesOf(msg.Body),
		fsubject,
		foldedSender(msg.FromName, msg.From),
		search,
		encodeHeaders(msg.Headers),
		[]byte(msg.Plain),
		record.AppendStrings(nil, msg.Links),
		db.zenc.EncodeAll(msg.Raw, make([]byte, 0, len(msg.Raw)/2+64)),
	}}
}

// delivery is one Deliver's share of a batched commit.
type delivery struct {
	received int64   // the clock's time, unix ms
	times    []int64 // the receivedAt of each email, set in the transaction
	inboxes  []string
	ids      []uuid.UUID
	to       [][]byte
	row      messageRow
	auth     []byte      // the message's authentication record (auth.go), or nil
	events   []hookEvent // the webhook events of the emails (outbox.go)
	eventMsg *eventMessage
	session  *smtpLogRow // the record of the SMTP session that delivers it; nil when none

	err error // the outcome of its commit, set by commitBatch

}

// maxBatch bounds the deliveries of one transaction
// (commit.Group). PostgreSQL groups the WAL flushes of concurrent
// commits too, but a commit per message also costs a round trip per
// statement and a NOTIFY each (docs/scale.md).
const maxBatch = 64

// commitTimeout bounds one batch's transaction, so that a database that
// stops answering fails the deliveries (451) rather than hang them.
const commitTimeout = 30 * time.Second

// commitBatch writes batch in one transaction and sets the err of each
// delivery. A transaction that fails before COMMIT on a deadlock is
// retried whole; on another fault of the database (not of its
// connection), each delivery is retried alone, so that one that cannot
// be stored does not fail the others. A failed COMMIT, whose outcome is
// unknown, fails them all: each sender gets a 451 and tries again.
func (db *DB) commitBatch(ctx context.Context, batch []*delivery) {
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	var (
		committing bool
		err        error
	)
	for range 3 {
		if committing, err = db.insert(ctx, batch); !retryable(err) {
			break
		}
	}
	if err != nil && !committing && len(batch) > 1 && !errors.Is(db.fail(err), storage.ErrUnavailable) {
		for _, d := range batch {
			_, d.err = db.insert(ctx, []*delivery{d})
		}
		return
	}
	for _, d := range batch {
		d.err = err
	}
}

// retryable reports whether err is a conflict that a new transaction may
// not meet: a deadlock or a serialization failure.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// insert runs the transaction of batch. committing reports whether the
// error came from COMMIT, whose outcome is then unknown.
func (db *DB) insert(ctx context.Context, batch []*delivery) (committing bool, err error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	var inboxes []string
	for _, d := range batch {
		inboxes = append(inboxes, d.inboxes...)
	}
	slices.Sort(inboxes)
	inboxes = slices.Compact(inboxes)
	held, err := lockInboxes(ctx, tx, inboxes)
	if err != nil {
		return false, err
	}
	gone, err := db.write(ctx, tx, batch, inboxes, held)
	if err != nil {
		return false, err
	}
	if len(gone) > 0 {
		if err := deleteOrphans(ctx, tx, gone); err != nil {
			return false, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return true, err
	}
	return false, nil
}

// inboxState is what an inbox holds as a batch is written into it.
type inboxState struct{ newest, count int64 }

// lockInboxes locks the row of each of inboxes (sorted), in one order on
// every node so that two batches never wait for each other in a cycle;
// then, in a statement of its own (a new snapshot under READ COMMITTED),
// reads what the inboxes hold now that no other delivery to them can
// commit: their newest receivedAt and their count, by name. An inbox
// without an email is not in the map.
func lockInboxes(ctx context.Context, tx pgx.Tx, inboxes []string) (map[string]*inboxState, error) {
	var b pgx.Batch
	b.Queue(`INSERT INTO inboxes (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO UPDATE SET name = excluded.name`, inboxes)
	b.Queue(`SELECT inbox, max(received_at), count(*) FROM emails WHERE inbox = ANY($1) GROUP BY inbox`, inboxes)
	res := tx.SendBatch(ctx, &b)
	defer res.Close()
	if _, err := res.Exec(); err != nil {
		return nil, err
	}
	rows, err := res.Query()
	if err != nil {
		return nil, err
	}
	held := make(map[string]*inboxState, len(inboxes))
	for rows.Next() {
		var name string
		var s inboxState
		if err := rows.Scan(&name, &s.newest, &s.count); err != nil {
			rows.Close()
			return nil, err
		}
		held[name] = &s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return held, res.Close()
}

// batchRows are the columns of the rows a batch inserts, one array each,
// for unnest.
type batchRows struct {
	emailIDs, messageIDs []uuid.UUID
	emailInboxes         []string
	emailTimes           []int64
	emailTo, emailSigs   [][]byte
	messages             []uuid.UUID
	bytea                [11][][]byte // the bytea columns of messageColumns
	texts                []*string
	auths                [][]byte
}

// place gives each email of batch its receivedAt, counting them in held
// (spec §3: receivedAt strictly increases within an inbox in commit
// order, which is decided here, under the inboxes' locks), and returns
// the rows to insert.
func place(batch []*delivery, held map[string]*inboxState) batchRows {
	var r batchRows
	for _, d := range batch {
		for i, inbox := range d.inboxes {
			s := held[inbox]
			if s == nil {
				s = &inboxState{newest: -1}
				held[inbox] = s
			}
			d.times[i] = max(d.received, s.newest+1)
			s.newest = d.times[i]
			s.count++
			r.emailIDs = append(r.emailIDs, d.ids[i])
			r.messageIDs = append(r.messageIDs, d.ids[0])
			r.emailInboxes = append(r.emailInboxes, inbox)
			r.emailTimes = append(r.emailTimes, d.times[i])
			r.emailTo = append(r.emailTo, d.to[i])
			r.emailSigs = append(r.emailSigs, d.row.sig)
		}
		r.messages = append(r.messages, d.row.id)
		r.texts = append(r.texts, d.row.text)
		r.auths = append(r.auths, d.auth)
		for j, v := range d.row.bytea {
			r.bytea[j] = append(r.bytea[j], v)
		}
	}
	return r
}

// write inserts the messages and emails of batch into inboxes (locked,
// what they held in held), with their webhook events, trims the inboxes
// past the per-inbox cap and notifies the other nodes, in one round trip.
// It returns the messages of the emails the trim deleted.
func (db *DB) write(ctx context.Context, tx pgx.Tx, batch []*delivery, inboxes []string, held map[string]*inboxState) ([]uuid.UUID, error) {
	r := place(batch, held)
	cols := make([]any, 0, 14)
	cols = append(cols, r.messages)
	for _, c := range r.bytea {
		cols = append(cols, c)
	}
	cols = append(cols, r.texts, r.auths)
	var b pgx.Batch
	b.Queue(`WITH r AS (SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::bytea[], $4::bytea[], $5::bytea[], $6::bytea[],
			$7::bytea[], $8::bytea[], $9::bytea[], $10::bytea[], $11::bytea[], $12::bytea[], $13::text[], $14::bytea[])
			AS r(`+messageColumns+`, auth)),
		m AS (INSERT INTO messages (id, from_addr, from_name, subject, fsubject, fsender, search_text, search, headers)
			SELECT id, from_addr, from_name, subject, fsubject, fsender, search_text, search, headers FROM r)
		INSERT INTO bodies (id, body, plain, links, raw, auth) SELECT id, body, plain, links, raw, auth FROM r`,
		cols...)
	// unnest keeps the order of the arrays, and the identity of seq
	// counts up in it: arrival order within the batch.
	b.Queue(`INSERT INTO emails (id, inbox, received_at, message, to_addr, sig)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::uuid[], $5::bytea[], $6::bytea[])`,
		r.emailIDs, r.emailInboxes, r.emailTimes, r.messageIDs, r.emailTo, r.emailSigs)
	queued := 2
	if queueEvents(&b, batch) {
		queued += 2
	}
	var sessions smtpLogRows
	for _, d := range batch {
		if d.session != nil {
			sessions.add(*d.session)
		}
	}
	if len(sessions.ids) > 0 {
		b.Queue(deliverSMTPLogSQL, sessions.args()...)
		queued++
		if db.retention.MaxSessions > 0 {
			// The cap holds at every commit: under it, one probe of the
			// index of seq.
			b.Queue(trimSMTPLogSQL, db.retention.MaxSessions, len(sessions.ids)+trimAtDelivery)
			queued++
		}
	}
	var trimmed int
	if db.retention.MaxPerInbox > 0 {
		for _, inbox := range inboxes {
			if over := held[inbox].count - int64(db.retention.MaxPerInbox); over > 0 {
				b.Queue(trimSQL, inbox, over)
				trimmed++
			}
		}
	}
	// One NOTIFY per commit, not per message: the other nodes wake the
	// waiters of these inboxes (listen.go).
	b.Queue(`SELECT pg_notify($1, $2)`, channel, db.payload(inboxes))
	res := tx.SendBatch(ctx, &b)
	defer res.Close()
	for range queued {
		if _, err := res.Exec(); err != nil {
			return nil, err
		}
	}
	var gone []uuid.UUID
	for range trimmed {
		rows, err := res.Query()
		if err != nil {
			return nil, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return nil, err
		}
		gone = append(gone, ids...)
	}
	if _, err := res.Exec(); err != nil {
		return nil, err
	}
	return gone, res.Close()
}

// trimSQL deletes the n oldest emails of an inbox and returns their
// messages. It locks them oldest first, as Clear and Sweep do.
const trimSQL = `DELETE FROM emails WHERE seq IN (
	SELECT seq FROM emails WHERE inbox = $1 ORDER BY received_at, seq LIMIT $2 FOR UPDATE)
	RETURNING message`

// deleteOrphans deletes those of the messages ids (and their bodies) that no
// email refers to any more. A statement of its own: the emails deleted before
// are gone from its snapshot.
func deleteOrphans(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, ids []uuid.UUID) error {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(string(a[:]), string(b[:])) })
	ids = slices.Compact(ids)
	_, err := q.Exec(ctx, `WITH gone AS (
		DELETE FROM messages m WHERE m.id = ANY($1) AND NOT EXISTS (SELECT 1 FROM emails e WHERE e.message = m.id) RETURNING id)
		DELETE FROM bodies WHERE id IN (SELECT id FROM gone)`, ids)
	return err
}
