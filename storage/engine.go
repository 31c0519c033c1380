package storage

import (
	"context"
	"io"
	"time"
)

// Deliverer is the part of an Engine that takes mail in: all smtpd needs.
type Deliverer interface {
	// Deliver stores msg once for each recipient address in to, in one
	// durable commit, and returns the stored emails in the order of to,
	// each with the ReceivedAt it was stored with. Each address's local
	// part must pass StorableLocalPart.
	// When Deliver returns nil the emails are durable (spec §2: the 250
	// comes after it). Within an inbox, receivedAt strictly increases in
	// commit order: an email that would not be newer than the newest of
	// its inbox gets that time plus 1 ms (spec §3). An inbox past the
	// store's per-inbox cap loses its oldest emails in the same commit.
	// Deliver returns an error wrapping ErrFull when the store has no room.
	Deliver(ctx context.Context, msg *Message, to []string) ([]Email, error)
}

// Engine is a store of burner's data, as every engine (storage/boltdb,
// storage/postgres) implements it: in full, safe for concurrent use, and
// passing storetest.Run. Nothing in it is optional, so no caller asks
// which engine it has; a hot backup (Snapshotter) alone is, for a
// database server has its own tools. Each method fails with ctx.Err()
// when ctx is done before it starts, and wraps any error it returns with
// what it was doing.
//
// A caller that needs a part of it takes that part: smtpd a Deliverer,
// the webhook worker an Outbox, Import its source an Exporter.
type Engine interface {
	Deliverer

	// List returns the emails of q.LocalPart that match q, newest first
	// (receivedAt descending, then reverse arrival order). The filters
	// mean what Query says; every engine lets the same code decide them
	// (an engine may prefilter), so that engines agree byte for byte.
	// With q.AfterID or q.BeforeID it returns ErrNotFound when that email
	// does not exist or is in another inbox.
	List(ctx context.Context, q Query) ([]Email, error)
	// Changed returns a channel that is closed once an email for the inbox
	// localPart has been committed after the call. A waiter takes the
	// channel first and then lists, so that no delivery slips between.
	Changed(localPart string) <-chan struct{}

	// Email returns the email with id, or ErrNotFound (also for an id that
	// is not in the canonical form ParseID takes).
	Email(ctx context.Context, id string) (Email, error)
	// Raw returns the message of email id as it was received, or ErrNotFound.
	Raw(ctx context.Context, id string) ([]byte, error)
	// Content returns the plain text and links of email id, or ErrNotFound.
	Content(ctx context.Context, id string) (Content, error)
	// MarkRead sets the read flag of email id, or returns ErrNotFound.
	MarkRead(ctx context.Context, id string) error
	// Delete removes email id, or returns ErrNotFound. Other recipients'
	// copies of the same message are not touched.
	Delete(ctx context.Context, id string) error
	// Clear deletes every email of the inbox localPart and returns how many
	// it deleted. It works in small steps and stops early when ctx is done.
	Clear(ctx context.Context, localPart string) (int, error)

	// Attachments returns the stored attachment index of the message of
	// email id, and false when none is stored yet; ErrNotFound when there
	// is no email with id.
	Attachments(ctx context.Context, id string) (Attachments, bool, error)
	// PutAttachments stores a as the attachment index of the message of
	// email id, shared by every email of that message. It returns
	// ErrNotFound when there is no email with id, and an error wrapping
	// ErrFull when the store has no room for it. The index goes with the
	// last email of its message.
	PutAttachments(ctx context.Context, id string, a Attachments) error

	// Auth returns the authentication record of the message of email id
	// (spec §12), one for all the emails of that message: the envelope
	// recorded at delivery (Message.Auth) and, once its Status is
	// AuthDone, the verdicts. A message stored without one reads as
	// Status AuthOff with a zero Envelope. It returns ErrNotFound when
	// there is no email with id.
	Auth(ctx context.Context, id string) (AuthResult, error)
	// PutAuth stores r as the authentication record of the message of
	// each email of ids, replacing the one stored, and wakes the
	// AuthChanged waiters of ids. ids are the emails of one delivery, as
	// smtpd hands them to the verifier, or some of them: those deleted
	// since are passed over, and PutAuth returns ErrNotFound when none is
	// left (a verdict that came after its message was deleted); an error
	// wrapping ErrFull when the store has no room for it, as
	// PutAttachments. The record goes with the last email of its message.
	PutAuth(ctx context.Context, ids []string, r AuthResult) error
	// AuthChanged returns a channel that is closed once PutAuth has stored
	// a record for email id after the call, on this node or any other, or
	// when the engine may have missed one (the notifications of other
	// nodes lost): a waiter takes the channel first, then reads Auth, and
	// reads again when it is closed.
	AuthChanged(id string) <-chan struct{}

	// CreateKey makes a new API key called name (trimmed; ValidKeyName, or
	// ErrBadKeyName) with scope, and returns it with its secret, which is
	// never stored. The scope's patterns must pass ParseInboxPattern (or
	// ErrBadInboxPattern); the key is stored with the scope CleanScope
	// gives, and every method that returns the key returns that scope. It
	// returns ErrKeyExists when the name is taken.
	CreateKey(ctx context.Context, name string, scope Scope) (Key, string, error)
	// CreateKeyWithSecret makes a new API key called name with scope, as
	// CreateKey does, whose secret is secret rather than a new one (spec
	// §14: BURNER_KEY names the key a container or CI job uses). secret
	// must pass ValidSecret, or ErrBadSecret; as for any key, the store
	// keeps only its hash. It returns ErrKeyExists when the name is taken
	// or a key with that secret exists already (a secret names one key).
	CreateKeyWithSecret(ctx context.Context, name string, scope Scope, secret string) (Key, error)
	// Keys returns every API key, oldest first (then by name).
	Keys(ctx context.Context) ([]Key, error)
	// Key returns the key with id, or ErrNotFound (also once it is revoked).
	Key(ctx context.Context, id string) (Key, error)
	// RevokeKey deletes the key whose id, or else whose name, is idOrName,
	// and returns it; ErrNotFound when there is none. It stops working at once.
	RevokeKey(ctx context.Context, idOrName string) (Key, error)
	// Authenticate returns the key whose secret is secret, or ErrNotFound,
	// and notes its use without a write per request (spec §1).
	Authenticate(ctx context.Context, secret string) (Key, error)
	// KeyBySecret returns the key whose secret is secret, or ErrNotFound
	// (always for a secret that fails ValidSecret, which no key has), as
	// Authenticate does but without noting a use: for the server's own
	// checks at start, which are no use of the key.
	KeyBySecret(ctx context.Context, secret string) (Key, error)

	// Stats counts what the store holds.
	Stats(ctx context.Context) (Stats, error)
	// Inboxes returns every inbox that holds an email, by name.
	Inboxes(ctx context.Context) ([]Inbox, error)
	// RecentInboxes returns the inboxes that hold an email and that q
	// keeps (InboxQuery.Matches), the one whose newest email is the
	// newest first (then by name), at most q.Limit of them, each with its
	// count and newest: the web UI's list of recent inboxes. Unlike
	// Inboxes it costs no read per inbox: a store of 100,000 inboxes
	// answers it for a page view.
	RecentInboxes(ctx context.Context, q InboxQuery) ([]Inbox, error)
	// Sweep applies retention: it deletes emails older than the store's
	// maximum age and, in each inbox, the oldest beyond its cap, in small
	// steps, and returns how many emails it deleted. It keeps the SMTP
	// session log within Retention.SessionsMaxAge and MaxSessions too
	// (records deleted are not counted), and forgets the RCPTs that fault
	// rules with PerMinute counted more than a minute ago. It stops early
	// when ctx is done.
	Sweep(ctx context.Context) (int, error)
	// CheckWritable fails when the store cannot take a write now, and with
	// an error wrapping ErrFull when new mail would be refused for want of
	// room. It may cost a durable write: callers should not run it per
	// request.
	CheckWritable(ctx context.Context) error
	// Check reads the whole store and reports what is wrong with it, as
	// bbolt's check command does (`burner check`). It writes nothing.
	Check(ctx context.Context) (CheckReport, error)

	// The webhook outbox (spec §9): Deliver writes the events of the
	// hooks the store was opened with in the commit of their emails.
	Outbox

	// Web UI sessions (spec §10), kept by the store so that a session
	// made on one node is valid on every node of one database, and
	// outlives a restart of serve. A session ends at its expiry, at
	// logout, and at once when its key is revoked. Times are stored to
	// the millisecond.

	// CreateSession stores a session for the key keyID until expires.
	// It returns ErrNotFound when there is no key keyID (revoked).
	CreateSession(ctx context.Context, hash SessionHash, keyID string, expires time.Time) error
	// Session returns the session of hash, or ErrNotFound when there is
	// none, it expired at now, or its key has been revoked.
	Session(ctx context.Context, hash SessionHash, now time.Time) (Session, error)
	// TouchSession moves the end of the session of hash to expires, unless
	// it already ends later: of two touches the later end wins. It is not
	// an error when the session is gone.
	TouchSession(ctx context.Context, hash SessionHash, expires time.Time) error
	// DeleteSession ends the session of hash. It is not an error when the
	// session is gone.
	DeleteSession(ctx context.Context, hash SessionHash) error
	// DeleteExpiredSessions removes the sessions expired at now and
	// returns how many.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)

	// The SMTP session log (spec §13.1): a record of every SMTP session
	// that reached a RCPT. Deliver writes the record of a session that
	// stores mail (Message.Session) in the delivery's own commit; the
	// others come in batches through WriteSMTPSessions. Every commit that
	// writes a record holds Retention.MaxSessions, deleting the oldest
	// records beyond it; Sweep holds it too (after a lower cap) and
	// Retention.SessionsMaxAge. The log is diagnostics: Export and Import
	// do not carry it.

	// WriteSMTPSessions writes recs to the session log in one
	// transaction. Each replaces the record of its session (the same ID
	// and StartedAt), except that a record still open (EndedAt nil)
	// never replaces an ended one: an open record may still wait in a
	// batch when its session's final record is written. Past
	// Retention.MaxSessions it deletes the oldest records in the same
	// transaction, so that a flood of sessions cannot grow the log past
	// its cap.
	WriteSMTPSessions(ctx context.Context, recs []SMTPSession) error
	// SMTPSessions returns the records q selects, newest first (StartedAt
	// descending, then ID descending).
	SMTPSessions(ctx context.Context, q SMTPSessionQuery) ([]SMTPSession, error)

	// Fault rules (spec §13.2), kept by the store so that every node
	// applies them and counts their uses exactly. Export and Import do
	// not carry them: they are a test's state, and the configuration's
	// are armed again at start.

	// CreateFaultRule stores rule as a new rule, after every rule there
	// is, and returns it with its ID, CreatedAt and Used (0). rule must
	// pass CleanFaultRule, else the *FaultRuleError it gives; a store that
	// holds MaxFaultRules rules returns ErrTooManyFaultRules.
	CreateFaultRule(ctx context.Context, rule FaultRule) (FaultRule, error)
	// FaultRules returns every rule, spent ones too, in creation order.
	FaultRules(ctx context.Context) ([]FaultRule, error)
	// DeleteFaultRule deletes the rule with id, or returns ErrNotFound.
	DeleteFaultRule(ctx context.Context, id string) error
	// ArmFaultRules makes rules, the configuration's ([[faults.rules]]),
	// the store's configured rules, in one transaction: each gets the id
	// ConfigFaultRuleIDs gives it and Config set; one armed already keeps
	// its uses and its place in creation order; a new one comes after
	// every rule there is; a configured rule not in rules is deleted. So
	// the same configuration, armed at every start of every node, arms
	// each rule once. Each must pass CleanFaultRule (else the
	// *FaultRuleError of the first that does not). It returns the
	// configured rules as stored.
	ArmFaultRules(ctx context.Context, rules []FaultRule) ([]FaultRule, error)
	// ApplyFaultRule returns the first rule in creation order that
	// applies at stage to a message for any of inboxes (InboxNames), and
	// counts that use of it, exactly across nodes; ok is false when none
	// applies. A spent rule applies no more; a rule with PerMinute
	// applies as FaultRule.Limits says, counting the RCPTs this method
	// was told of: at FaultAtRcpt inboxes holds the one inbox a RCPT
	// that burner would accept names, and a RCPT no rule answers is
	// counted for that inbox when a rule with PerMinute covers it.
	ApplyFaultRule(ctx context.Context, stage FaultStage, inboxes []string) (rule FaultRule, ok bool, err error)

	// What `burner copy` carries from one store to another (spec §10):
	// the whole content as it is stored (copy.go).
	Exporter
	// Import copies everything src exports into the store, keeping ids,
	// receivedAt, read flags, key hashes, scopes and times, and events'
	// attempts and due times, and returns how much it copied. The store
	// must hold nothing (no email, key or event), else Import returns an
	// error wrapping ErrNotNew and writes nothing. It takes the store's
	// options as they are (no retention is applied, no webhook event is
	// made: the events copied are src's). progress, when not nil, is
	// called now and then with the counts so far. An Import that fails
	// part way may leave part of src in the store: the caller discards
	// the store.
	Import(ctx context.Context, src Exporter, progress func(CopyCount)) (CopyCount, error)

	// Close releases the store, writing what it holds in memory (key
	// usage). It is safe to call more than once.
	Close() error
}

// Snapshotter is an Engine that can take a consistent copy of itself
// while it goes on taking mail: a hot backup. It is the one optional
// ability, found by type assertion (bbolt has it; PostgreSQL has
// pg_dump).
type Snapshotter interface {
	// Snapshot freezes a view of the whole store. Close it soon: an engine
	// may hold back some writes until then.
	Snapshot(ctx context.Context) (Snapshot, error)
}

// Snapshot is a frozen, consistent view of a whole store.
type Snapshot interface {
	// Size returns how many bytes WriteTo writes.
	Size() int64
	// WriteTo writes the snapshot, a complete store of Size bytes, to w.
	io.WriterTo
	// Close releases the snapshot. It is safe to call more than once.
	Close() error
}
