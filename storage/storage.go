// Package storage keeps burner's emails and API keys in one bbolt file.
package storage

import (
	"errors"
	"strings"
	"time"
)

// ErrNotFound means no email or API key matches what was asked for.
var ErrNotFound = errors.New("storage: not found")

// Email is one stored copy of a message, as the API shows it. A message
// accepted for several recipients is stored as one Email per recipient.
type Email struct {
	ID         string    // random UUID v4
	To         string    // the recipient address as given in RCPT TO
	From       string    // sender address
	FromName   string    // sender display name, "" when none
	Subject    *string   // nil when the message has no Subject header
	Body       *string   // sanitized HTML, nil when the message has no text body
	ReceivedAt time.Time // UTC, truncated to the millisecond
	Read       bool      // opened in the web UI
}

// ErrFull means the data file has reached its size cap (Options.MaxBytes):
// new mail must wait until the sweeper or a client makes room.
var ErrFull = errors.New("storage: data file is full")

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

// Query selects emails of one inbox, newest first.
type Query struct {
	LocalPart string    // matched case-insensitively; must pass ValidLocalPart
	Since     time.Time // when not zero, only emails received strictly after it
	Limit     int       // at most this many; 0 means no limit
	Subject   string    // case-folded substring of the subject
	Body      string    // case-folded substring of the body text
	Terms     []string  // each must occur in subject, sender name, sender address or body text
	Header    *Header   // when set, a field with this name (any case) whose value holds Value (case-folded)
	After     string    // when set, only emails that arrived after the email with this id (ErrNotFound if unknown)
	Before    string    // when set, only emails that arrived before the email with this id (ErrNotFound if unknown), for paging
	NoBody    bool      // Body is left nil: the caller shows no body, so List decodes none
}

// MaxLocalPart is the longest local part burner accepts.
// RFC 5321 §4.5.3.1.1: a local part is at most 64 octets.
const MaxLocalPart = 64

// LocalPart returns the part of an address before its last '@' (all of it
// when it has none): the inbox the address belongs to.
func LocalPart(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[:i]
	}
	return addr
}

// ValidLocalPart reports whether s is a local part the API can address:
// one or more of A-Z a-z 0-9 and _ - + . (length is checked separately,
// against MaxLocalPart, because the API names that error apart).
func ValidLocalPart(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_' || c == '-' || c == '+' || c == '.':
		default:
			return false
		}
	}
	return true
}
