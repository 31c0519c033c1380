// Package storage is the contract between burner's protocols and its
// stores, and nothing else: the types an email is made of, the sentinel
// errors, the Engine interface every engine implements in full, key
// scopes (spec §8), and the rules a caller must know (inbox names, ids,
// what each filter of a Query means). The engines live below it:
// storage/boltdb keeps everything in one bbolt file, storage/postgres
// lets several nodes share one PostgreSQL database; what they share to
// answer alike (case folding, the matcher, signatures, record codecs,
// group commit, the notifier, key usage) is in storage/internal, out of
// its callers' reach. storage/storetest is the suite each engine passes.
package storage

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotFound means no email or API key matches what was asked for.
var ErrNotFound = errors.New("storage: not found")

// ErrFull means the store has reached its size cap (or its disk is full):
// new mail must wait until the sweeper or a client makes room.
var ErrFull = errors.New("storage: data file is full")

// ErrLocked means another process (usually a running `burner serve`) holds
// the store, which allows one process at a time.
var ErrLocked = errors.New("storage: data file is in use by another process")

// ErrUnavailable means the store cannot be reached now (its database
// server is down or out of reach) and nothing was done: the caller may
// retry later. SMTP answers 451 4.3.0, the API 503 with Retry-After
// (spec §10).
var ErrUnavailable = errors.New("storage: the database cannot be reached")

// ErrCorrupt means a stored record is damaged: it does not decode as what
// the store wrote. It is a fault of the store (its disk or its database),
// never of the request.
var ErrCorrupt = errors.New("storage: corrupt record")

// ErrWriteFailed means the store's medium refused a commit: an I/O error,
// or a disk that filled up, which an estimate of free space beforehand
// did not foresee. It is the store's fault, not the mail's: SMTP answers
// 451 (452 when the error wraps ErrFull too), and /healthz 503 until a
// delivery succeeds again (spec §5).
var ErrWriteFailed = errors.New("storage: the write failed")

// Email is one stored copy of a message, as the API shows it. A message
// accepted for several recipients is stored as one Email per recipient.
type Email struct {
	ID         string    // a UUID, version 7 (time-ordered) or 4 for emails stored before (spec §3)
	To         string    // the recipient address as given in RCPT TO
	From       string    // sender address
	FromName   string    // sender display name, "" when none
	Subject    *string   // nil when the message has no Subject header
	Body       *string   // sanitized HTML, nil when the message has no text body
	ReceivedAt time.Time // UTC, truncated to the millisecond; strictly increasing within an inbox
	Read       bool      // opened in the web UI
}

// Header is one header field of a message, its value decoded (RFC 2047).
type Header struct {
	Name, Value string
}

// Message is what Deliver stores: a parsed message, once for all its
// recipients.
type Message struct {
	From     string
	FromName string
	Subject  *string
	Body     *string  // sanitized HTML
	Text     string   // what the body filter searches: visible body text, link targets, text/plain part
	Plain    string   // the text/plain part, or else the text of the HTML body
	Links    []string // the link targets of the body, in order, without repeats
	Headers  []Header // the top-level header fields, for the header filter
	Raw      []byte   // the message as received
	// Session is the record of the SMTP session that delivers the
	// message (spec §13.1), for Deliver to write in the delivery's own
	// commit, with Emails set to the ids of the emails it stores; nil when
	// none is kept. Deliver does not keep it past its return.
	Session *SMTPSession
	// Auth is the message's authentication record (spec §12) as smtpd
	// makes it at delivery: the envelope, with status AuthPending (or
	// AuthOff when nothing verifies), for Deliver to write in the
	// delivery's own commit, one for all the emails it stores. nil keeps
	// none: Engine.Auth then reads AuthOff.
	Auth *AuthResult
}

// Email returns the email m makes for the recipient address to, with id,
// received at receivedAt, not read.
func (m *Message) Email(id, to string, receivedAt time.Time) Email {
	return Email{ID: id, To: to, From: m.From, FromName: m.FromName, Subject: m.Subject, Body: m.Body, ReceivedAt: receivedAt}
}

// CutMark ends a body that smtpd cut at its cap (smtpd.Options.MaxBodyBytes):
// the body kept is the first part of the message's, and the whole message
// is in its raw source. The web UI looks for it to offer the source.
const CutMark = `<p class="burner-cut">[…] burner kept only the start of this body; the whole message is in its source.</p>`

// CutText ends a text (the plain part, the search text) that smtpd cut at
// the body cap, for the same reason.
const CutText = "\n[…] burner kept only the start of this text; the whole message is in its source."

// Content is what a message says beyond its Email fields.
type Content struct {
	Plain string   // the text/plain part, or else the text of the HTML body
	Links []string // the link targets of the body, in order, without repeats
}

// Query selects emails of one inbox, newest first. Its filters combine:
// an email is listed when it passes each filter that is set. A text
// filter is a substring test under Unicode full case folding, of the
// filter and the field alike, so that "STRASSE" finds "Straße" (spec §4);
// an empty one is not set.
type Query struct {
	LocalPart string    // the inbox, matched case-insensitively; must pass ValidLocalPart
	Since     time.Time // when not zero, only emails received strictly after it
	Before    time.Time // when not zero, only emails received strictly before it
	Limit     int       // at most this many; 0 means no limit
	Subject   string    // a substring of the subject; an email without one has none
	From      string    // a substring of the sender's address or of its display name (spec §14)
	Body      string    // a substring of the body text: visible text, link targets, text/plain part
	Terms     []string  // each a substring of the subject, the sender's name or address, or the body text
	Header    *Header   // when set, a field with this name (any case) whose value holds Value (case-folded)
	AfterID   string    // when set, only emails that arrived after the email with this id (ErrNotFound if unknown)
	BeforeID  string    // when set, only emails that arrived before the email with this id (ErrNotFound if unknown), for paging
	NoBody    bool      // Body is left nil: the caller shows no body, so List decodes none
}

// Stats describes what a store holds.
type Stats struct {
	Emails    int       // emails stored
	Inboxes   int       // inboxes with at least one email
	Keys      int       // API keys
	FileBytes int64     // the store's size on disk
	Oldest    time.Time // when the oldest email was received; zero without emails
	// SMTPSessions counts the records of the SMTP session log (spec
	// §13.1).
	SMTPSessions int
}

// Retention is what a store keeps (spec §6), as both engines' options
// take it. The zero value keeps every email, with no cap.
type Retention struct {
	// MaxAge is how old an email may grow before Sweep deletes it; 0 keeps
	// emails forever.
	MaxAge time.Duration
	// MaxPerInbox caps the emails of one inbox, exactly across the nodes
	// of one store: delivery and Sweep delete the oldest beyond it. 0
	// means no cap.
	MaxPerInbox int
	// MaxBytes caps the size of the store (the data in a bbolt file, the
	// size of a PostgreSQL database): past it Deliver returns an error
	// wrapping ErrFull. 0 means no cap.
	MaxBytes int64
	// SessionsMaxAge is how long the SMTP session log keeps a record
	// (spec §13.1), from its StartedAt; 0 keeps records until
	// MaxSessions pushes them out.
	SessionsMaxAge time.Duration
	// MaxSessions caps the records of the SMTP session log, the oldest
	// going first: every commit that writes a record holds it, and Sweep.
	// 0 means no cap.
	MaxSessions int
}

// Inbox describes one inbox: an inbox exists while it holds an email.
type Inbox struct {
	Name   string    // the local part, lower-cased (InboxName)
	Emails int       // how many emails it holds
	Newest time.Time // when its newest email was received
}

// InboxQuery selects inboxes for Engine.RecentInboxes. Its filters
// combine: an inbox is listed when it passes each one that is set.
type InboxQuery struct {
	// Prefix keeps the inboxes whose names start with it, in any case
	// (names are lower case: InboxName); "" keeps every inbox.
	Prefix string
	// Patterns keeps the inboxes that one of them reaches, as the
	// patterns of a key's scope do (Scope.Reaches), each in the form
	// ParseInboxPattern gives; none keeps every inbox. The web UI lists
	// a scoped key's own inboxes with them.
	Patterns []string
	// Limit is how many inboxes at most; 0 means no limit.
	Limit int
}

// Matches reports whether q keeps the inbox name, a name as InboxName
// gives it: the rule each engine decides by.
func (q InboxQuery) Matches(name string) bool {
	return strings.HasPrefix(name, InboxName(q.Prefix)) && Scope{Inboxes: q.Patterns}.Reaches(name)
}

// Attachment describes one file of a message.
type Attachment struct {
	Filename    string
	ContentType string // media type, without parameters
	ContentID   string // without angle brackets; "" when none
	Size        int64  // bytes, transfer encoding decoded
}

// Attachments is the index of a message's files: the first of them, in the
// order they appear, and how many more there are.
type Attachments struct {
	Files []Attachment
	// More counts the files found beyond Files.
	More int
	// Partial means the walk stopped before the end of the message, so
	// there may be files beyond the More counted: More is a lower bound.
	Partial bool
	// Rules is the version of the rules that found the files, chosen by
	// the caller of PutAttachments: a reader that finds other rules than
	// its own computes the index again.
	Rules int
}

// MaxProblems bounds the problems a CheckReport lists: a broken store can
// have millions, and the first ones tell what happened.
const MaxProblems = 100

// CheckReport is what a consistency check (Engine.Check) found: what the store
// holds, and what is wrong with it.
type CheckReport struct {
	SchemaVersion int
	FileBytes     int64
	Emails        int // email records
	Inboxes       int // inboxes with at least one email
	Messages      int // stored messages (a message to several recipients is stored once)
	Keys          int // API keys
	// Problems describes each inconsistency found, at most MaxProblems of
	// them; empty when the store is sound.
	Problems []string
	// More counts the problems found beyond those listed.
	More int
}

// OK reports whether the check found nothing wrong.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// Problemf adds a problem to the report, or counts it in More past
// MaxProblems.
func (r *CheckReport) Problemf(format string, args ...any) {
	if len(r.Problems) == MaxProblems {
		r.More++
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}
