// Package message turns a message as received (RFC 5322 bytes) into what
// burner shows of it: the decoded header (encoded words, addresses, media
// types, UTF-7), the text and a sanitized HTML body, and the files it
// carries. smtpd calls Parse at delivery; server lists and extracts files
// with Attachments and Attachment.
//
// One walk of the MIME tree (walk.go) decides, for every part, whether it
// is the message's text or a file, for delivery and the attachment routes
// alike, as a mail reader would:
//
//   - a part with Content-Disposition: attachment is a file;
//   - an inline text/plain or text/html part is the message's text, unless
//     it is named (a filename= or name= parameter) and a text part of its
//     kind came before it: then it is a file (a text/plain; name=x.txt
//     part that is the only text is the body, as Thunderbird shows it);
//   - every other leaf part (an image, a PDF, a message/rfc822) is a file.
//     An inline embedded message is a file whose text stands in for the
//     body when the message has none of its own (a forwarded message).
//
// The body is the first non-empty text/html part, sanitized, or else the
// first text/plain one made HTML; unnamed text parts after those are the
// message's text too, and neither shown nor files.
package message

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/emersion/go-message"
	"github.com/microcosm-cc/bluemonday"

	"burner/storage"
)

// Parser turns raw RFC 5322 messages into storage.Message values. It is
// built once and used from many goroutines; its sanitizing policies are
// made once a process and shared by every Parser.
type Parser struct {
	policy *bluemonday.Policy
	// view is policy as the fast sanitizer reads it (fastsanitize.go);
	// nil sends every body to bluemonday.
	view *policyView
	// maxBody caps what is kept of a body, of its text and of the plain
	// part, in bytes: the work a message costs grows with what is kept,
	// and a body past it is cut (see render.go).
	maxBody int
}

// DefaultMaxBody is the body cap of New(0): 1 MiB is a hundred times a
// newsletter's body.
const DefaultMaxBody = 1 << 20

// New returns a Parser that keeps at most maxBody bytes of a body, of its
// text and of its plain part; 0 means DefaultMaxBody.
func New(maxBody int) *Parser {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	policy, view := policies()
	return &Parser{policy: policy, view: view, maxBody: maxBody}
}

// policies returns the sanitizing policy for bluemonday and for the fast
// sanitizer, made once: both are read-only once built, and the view asks
// bluemonday about every element of HTML (2 ms).
var policies = sync.OnceValues(func() (*bluemonday.Policy, *policyView) {
	p := newPolicy()
	return p, newPolicyView(p)
})

// Parse parses raw (the message exactly as received, CRLF or LF line
// endings) with envelopeFrom being the SMTP MAIL FROM address ("" for the
// null sender). It never fails on malformed mail: it returns the best
// message it can, keeping From and Subject when only the MIME structure is
// broken. It returns an error only when not even the header could be read;
// the message is usable then too, with From set to envelopeFrom. Raw is raw
// itself, not a copy.
func (p *Parser) Parse(raw []byte, envelopeFrom string) (storage.Message, error) {
	m := storage.Message{From: envelopeFrom, Raw: raw}
	br := getReader(bytes.NewReader(raw))
	defer putReader(br)
	h, e, err := readEntity(br)
	if e.Entity == nil {
		return m, fmt.Errorf("read message header: %w", err)
	}

	m.From, m.FromName = sender(h.Get("From"), envelopeFrom)
	m.Subject = subject(h)
	m.Headers = headers(h)

	parts := findText(e, err, p.maxBody)
	p.body(&m, &parts)
	return m, nil
}

// maxHeaders bounds the header fields kept for the header filter; a
// message with more is hostile or broken, and its first fields are the ones
// a test sets.
const maxHeaders = 100

// headers returns the message's header fields with decoded values (RFC
// 2047), for the API's header filter.
func headers(h message.Header) []storage.Header {
	var out []storage.Header
	if n := min(h.Len(), maxHeaders); n > 0 {
		out = make([]storage.Header, 0, n)
	}
	for f := h.Fields(); f.Next() && len(out) < maxHeaders; {
		out = append(out, storage.Header{Name: f.Key(), Value: decodeHeader(f.Value())})
	}
	return out
}

// subject returns the decoded Subject header, or nil when there is none.
func subject(h message.Header) *string {
	if !h.Has("Subject") {
		return nil
	}
	s := decodeHeader(h.Get("Subject"))
	return &s
}
