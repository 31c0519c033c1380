package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"burner/storage"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The webhook outbox (spec §9) in the tables events and event_messages
// (migrate.go). A delivery writes its events in its own transaction, so a
// 250 never outlives its events. With several nodes on one database, an
// event is claimed with FOR UPDATE SKIP LOCKED and leased in its row
// (lease_until): no other claim takes it until the lease ends, so a node
// that dies mid-delivery leaves it to another once the lease is over.
// Times are unix milliseconds of the callers' clocks, as the Claim's Now.

// hookEvent is an event a delivery writes: for its i-th email, to a hook.
type hookEvent struct {
	email int
	hook  string
}

// eventMessage is what the events of one delivery share: the email as it
// was stored, but for its id, recipient and receivedAt.
type eventMessage struct {
	from, fromName, subject, body []byte // subject and body nil when absent
}

// cleanHooks checks hooks as the bbolt engine does and returns them with
// their scopes cleaned.
func cleanHooks(in []storage.Hook) ([]storage.Hook, error) {
	hooks := make([]storage.Hook, len(in))
	for i, h := range in {
		scope, err := storage.CleanScope(h.Scope)
		if err != nil || h.ID == "" || strings.IndexByte(h.ID, 0) >= 0 || slices.ContainsFunc(hooks[:i], func(o storage.Hook) bool { return o.ID == h.ID }) {
			return nil, fmt.Errorf("webhook %q: an empty, repeated or unusable id, or a bad scope (%v)", h.ID, err)
		}
		hooks[i] = storage.Hook{ID: h.ID, Scope: storage.Scope{Inboxes: scope.Inboxes}}
	}
	return hooks, nil
}

// planEvents fills d.events and d.eventMsg for the emails of d to the
// hooks of db that cover their inboxes, in the caller's goroutine.
func (db *DB) planEvents(d *delivery, msg *storage.Message, to []string) {
	if len(db.hooks) == 0 {
		return
	}
	for i, addr := range to {
		local := storage.LocalPart(addr)
		for _, h := range db.hooks {
			if h.Covers(local) {
				d.events = append(d.events, hookEvent{email: i, hook: h.ID})
			}
		}
	}
	if len(d.events) > 0 {
		d.eventMsg = &eventMessage{from: []byte(msg.From), fromName: []byte(msg.FromName), subject: bytesOf(msg.Subject), body: bytesOf(msg.Body)}
	}
}

// queueEvents queues in b the statements that write the events of batch,
// two of them, and reports whether it queued them: not when no delivery
// of batch has events. It runs after the receivedAt of each email is set.
func queueEvents(b *pgx.Batch, batch []*delivery) bool {
	var (
		msgIDs                     []uuid.UUID
		from, fromName, subj, body [][]byte
		hooks                      []string
		emails, messages           []uuid.UUID
		times                      []int64
		to                         [][]byte
	)
	for _, d := range batch {
		if len(d.events) == 0 {
			continue
		}
		m := d.eventMsg
		msgIDs = append(msgIDs, d.row.id)
		from, fromName = append(from, m.from), append(fromName, m.fromName)
		subj, body = append(subj, m.subject), append(body, m.body)
		for _, ev := range d.events {
			hooks = append(hooks, ev.hook)
			emails = append(emails, d.ids[ev.email])
			messages = append(messages, d.row.id)
			times = append(times, d.times[ev.email])
			to = append(to, d.to[ev.email])
		}
	}
	if len(msgIDs) == 0 {
		return false
	}
	b.Queue(`INSERT INTO event_messages (id, from_addr, from_name, subject, body)
		SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::bytea[], $4::bytea[], $5::bytea[])`,
		msgIDs, from, fromName, subj, body)
	b.Queue(`INSERT INTO events (hook, email, received_at, next_at, to_addr, message)
		SELECT h, e, t, t, a, m FROM unnest($1::text[], $2::uuid[], $3::bigint[], $4::bytea[], $5::uuid[]) AS r(h, e, t, a, m)`,
		hooks, emails, times, to, messages)
	return true
}

// ClaimEvents returns at most c.Max due events of hook c.Hook that no
// lease holds, and leases them to c.Node until c.Now+c.Lease
// (storage.Outbox). Rows another node is claiming at the same moment are
// skipped, not waited for.
func (db *DB) ClaimEvents(ctx context.Context, c storage.Claim) ([]storage.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.Max <= 0 {
		return nil, nil
	}
	now := c.Now.UnixMilli()
	rows, err := db.pool.Query(ctx, `WITH c AS (
			SELECT e.hook, e.email, m.from_addr, m.from_name, m.subject, m.body
			FROM events e LEFT JOIN event_messages m ON m.id = e.message
			WHERE e.hook = $1 AND e.next_at <= $2 AND e.lease_until <= $2
			ORDER BY e.next_at LIMIT $3
			FOR UPDATE OF e SKIP LOCKED)
		UPDATE events e SET lease_until = $4, lease_node = $5, lease_owner = $6
		FROM c WHERE e.hook = c.hook AND e.email = c.email
		RETURNING e.email, e.to_addr, e.received_at, e.next_at, e.attempts, c.from_addr, c.from_name, c.subject, c.body`,
		c.Hook, now, c.Max, c.Now.Add(c.Lease).UnixMilli(), c.Node, db.node)
	if err != nil {
		return nil, fmt.Errorf("claim events of hook %s: %w", c.Hook, db.fail(err))
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.Event, error) {
		var (
			id                            uuid.UUID
			to, from, fromName, subj, bod []byte
			received, next                int64
			attempts                      int
		)
		if err := r.Scan(&id, &to, &received, &next, &attempts, &from, &fromName, &subj, &bod); err != nil {
			return storage.Event{}, err
		}
		return storage.Event{
			Hook: c.Hook,
			Email: storage.Email{
				ID: id.String(), To: string(to), From: string(from), FromName: string(fromName),
				Subject: stringOf(subj), Body: stringOf(bod), ReceivedAt: time.UnixMilli(received).UTC(),
			},
			Attempts: attempts,
			Next:     time.UnixMilli(next).UTC(),
		}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim events of hook %s: %w", c.Hook, db.fail(err))
	}
	return evs, nil
}

// stringOf is the inverse of bytesOf: nil for a NULL column.
func stringOf(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// eventID parses the email id of e.
func eventID(e storage.Event) (uuid.UUID, error) {
	id, err := storage.ParseID(e.Email.ID)
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("event %s: %w", e.Email.ID, storage.ErrNotFound)
	}
	return id, nil
}

// CompleteEvent removes e from the outbox, and its message with its last
// event (storage.Outbox). It does so whoever holds the lease: the event
// was sent, or given up.
func (db *DB) CompleteEvent(ctx context.Context, e storage.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id, err := eventID(e)
	if err != nil {
		return fmt.Errorf("complete event: %w", err)
	}
	// The statement sees the events as they were before its own DELETE,
	// hence the event itself excepted. A sibling event removed by another
	// transaction at the same moment may leave the message behind:
	// DropEvents removes such orphans.
	_, err = db.pool.Exec(ctx, `WITH d AS (DELETE FROM events WHERE hook = $1 AND email = $2 RETURNING message)
		DELETE FROM event_messages m WHERE m.id IN (SELECT message FROM d)
			AND NOT EXISTS (SELECT 1 FROM events e WHERE e.message = m.id AND NOT (e.hook = $1 AND e.email = $2))`,
		e.Hook, id)
	if err != nil {
		return fmt.Errorf("complete event %s of hook %s: %w", e.Email.ID, e.Hook, db.fail(err))
	}
	return nil
}

// RetryEvent stores e.Attempts and next, and ends the lease
// (storage.Outbox). A node whose lease has ended and passed to another
// node changes nothing: the event is the other node's now, and ending its
// lease would let a third send it at the same time.
func (db *DB) RetryEvent(ctx context.Context, e storage.Event, next time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id, err := eventID(e)
	if err != nil {
		return fmt.Errorf("retry event: %w", err)
	}
	_, err = db.pool.Exec(ctx, `UPDATE events SET attempts = $3, next_at = $4, lease_until = 0, lease_node = NULL, lease_owner = NULL
		WHERE hook = $1 AND email = $2 AND (lease_owner IS NULL OR lease_owner = $5 OR lease_until <= $6)`,
		e.Hook, id, e.Attempts, next.UnixMilli(), db.node, db.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("retry event %s of hook %s: %w", e.Email.ID, e.Hook, db.fail(err))
	}
	return nil
}

// dropBatch bounds the events one statement of DropEvents removes.
const dropBatch = 10_000

// DropEvents removes the events of emails received before before, in
// statements of at most dropBatch, and returns how many it removed by
// hook (storage.Outbox). It then removes the messages no event refers to.
// It stops early when ctx is done.
func (db *DB) DropEvents(ctx context.Context, before time.Time) (map[string]int, error) {
	dropped := make(map[string]int)
	for {
		if err := ctx.Err(); err != nil {
			return dropped, err
		}
		rows, err := db.pool.Query(ctx, `WITH d AS (
				DELETE FROM events WHERE (hook, email) IN (SELECT hook, email FROM events WHERE received_at < $1 LIMIT $2)
				RETURNING hook)
			SELECT hook, count(*) FROM d GROUP BY hook`, before.UnixMilli(), dropBatch)
		if err != nil {
			return dropped, fmt.Errorf("drop events: %w", db.fail(err))
		}
		n := 0
		var (
			hook  string
			count int
		)
		_, err = pgx.ForEachRow(rows, []any{&hook, &count}, func() error {
			dropped[hook] += count
			n += count
			return nil
		})
		if err != nil {
			return dropped, fmt.Errorf("drop events: %w", db.fail(err))
		}
		if n < dropBatch {
			break
		}
	}
	if _, err := db.pool.Exec(ctx, `DELETE FROM event_messages m WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.message = m.id)`); err != nil {
		return dropped, fmt.Errorf("drop events: orphan messages: %w", db.fail(err))
	}
	return dropped, nil
}

// Waiting reports the events waiting, by hook (storage.Outbox).
func (db *DB) Waiting(ctx context.Context) ([]storage.HookWaiting, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT hook, count(*), min(received_at) FROM events GROUP BY hook ORDER BY hook COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("waiting events: %w", db.fail(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.HookWaiting, error) {
		var (
			w      storage.HookWaiting
			oldest int64
		)
		err := r.Scan(&w.Hook, &w.Events, &oldest)
		w.Oldest = time.UnixMilli(oldest).UTC()
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("waiting events: %w", db.fail(err))
	}
	return out, nil
}

// EventsAdded returns a channel closed once an event for hook is committed
// after the call, on this node or another (storage.Outbox), or when the
// notifications of other nodes may have been lost.
func (db *DB) EventsAdded(hook string) <-chan struct{} { return db.events.Changed(hook) }

// notifyEvents wakes the waiters of EventsAdded for the hooks of events.
func (db *DB) notifyEvents(events []hookEvent) {
	for _, h := range db.hooks {
		if slices.ContainsFunc(events, func(ev hookEvent) bool { return ev.hook == h.ID }) {
			db.events.Notify(storage.InboxName(h.ID))
		}
	}
}

// wakeHooks wakes the waiters of EventsAdded for this node's hooks that
// cover one of inboxes, which another node delivered to: its commit wrote
// the events of the hooks it was opened with, which are this node's
// (Options.Hooks). A NOTIFY per commit carries the inboxes already, so
// the events cost none of their own.
func (db *DB) wakeHooks(inboxes []string) {
	for _, h := range db.hooks {
		if slices.ContainsFunc(inboxes, h.Covers) {
			db.events.Notify(storage.InboxName(h.ID))
		}
	}
}

// wakeAllHooks wakes the waiters of EventsAdded of every hook.
func (db *DB) wakeAllHooks() {
	for _, h := range db.hooks {
		db.events.Notify(storage.InboxName(h.ID))
	}
}
