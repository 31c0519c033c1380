package storage

import (
	"bytes"
	"encoding/binary"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/text/cases"
)

// The email layout:
//
//	emails:   lower(localpart) 0x00 be64(receivedAt unix ms) be64(seq) -> email record
//	ids:      uuid (16 bytes)                                         -> emails key
//	inboxes:  lower(localpart)                                        -> be64(number of emails)
//	contents: be64(content seq)                                       -> content record
//	raw:      be64(content seq)                                       -> the message as received
//
// A local part never contains 0x00, so "alice" 0x00 is a prefix of alice's
// keys only (not of "alice+x" or "alicf"), and within it keys sort by time,
// then by seq, the emails bucket's sequence at commit: listing newest first is
// a seek past the prefix and a walk backwards that reads only what it returns.
// The inboxes bucket counts each inbox's emails, so that the per-inbox cap
// costs no scan and the sweeper visits each inbox once.
//
// The body, search text, headers and raw source are stored once per message
// and shared by its recipients' emails (a content record counts its
// references), so a message to 100 recipients does not cost 100 copies.
//
// An email record is
//
//	version(1) flags(1) id(16) contentKey(8) uvarint-prefixed: to, from, fromName, subject
//
// and a content record is
//
//	uvarint(refs) flags(1) uvarint-prefixed body
//	uvarint(number of headers) uvarint-prefixed: lower(name), fold(value) for each
//	uvarint-prefixed plain text
//	uvarint(number of links) uvarint-prefixed link for each
//	the case-folded search text, to the end
const (
	emailVersion   = 1
	flagRead       = 1 << 0
	flagHasSubject = 1 << 1
	flagHasBody    = 1 << 0
	emailFixedLen  = 2 + 16 + 8 // version, flags, id, content key
)

// localPartOf returns the part of addr before its last '@' (all of addr when
// it has none).
func localPartOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[:i]
	}
	return addr
}

// inboxName returns lower(localPart). Local parts are ASCII
// (ValidLocalPart), so ASCII lower-casing is the whole of case-insensitivity.
func inboxName(localPart string) []byte {
	p := make([]byte, 0, len(localPart)+1) // room for inboxPrefix's 0x00
	for i := 0; i < len(localPart); i++ {
		c := localPart[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		p = append(p, c)
	}
	return p
}

// inboxPrefix returns lower(localPart) 0x00, the prefix of the inbox's keys.
func inboxPrefix(localPart string) []byte { return append(inboxName(localPart), 0) }

// prefixEnd returns the first key past every key with prefix (an inbox
// prefix ends in 0x00, which becomes 0x01).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	end[len(end)-1]++
	return end
}

// emailKey returns inbox 0x00 be64(t in unix ms) be64(seq).
func emailKey(inbox []byte, t time.Time, seq uint64) []byte {
	k := make([]byte, 0, len(inbox)+17)
	k = append(k, inbox...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(t.UnixMilli()))
	return binary.BigEndian.AppendUint64(k, seq)
}

// keyInbox returns the inbox name of an emails key (its prefix without 0x00).
func keyInbox(key []byte) []byte { return key[:len(key)-17] }

func keyTime(key []byte) time.Time {
	ms := binary.BigEndian.Uint64(key[len(key)-16:])
	return time.UnixMilli(int64(ms)).UTC()
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func encodeEmail(e *Email, id uuid.UUID, ckey []byte) []byte {
	var flags byte
	if e.Read {
		flags |= flagRead
	}
	subject := ""
	if e.Subject != nil {
		flags |= flagHasSubject
		subject = *e.Subject
	}
	b := make([]byte, 0, emailFixedLen+len(e.To)+len(e.From)+len(e.FromName)+len(subject)+8)
	b = append(b, emailVersion, flags)
	b = append(b, id[:]...)
	b = append(b, ckey...)
	for _, s := range []string{e.To, e.From, e.FromName, subject} {
		b = appendString(b, s)
	}
	return b
}

// decodeEmail decodes an email record (without its body) and returns the key
// of its content record.
func decodeEmail(key, rec []byte) (Email, []byte, error) {
	if len(rec) < emailFixedLen || rec[0] != emailVersion || len(key) < 17 {
		return Email{}, nil, errCorrupt
	}
	flags := rec[1]
	e := Email{
		ID:         uuid.UUID(rec[2:18]).String(),
		ReceivedAt: keyTime(key),
		Read:       flags&flagRead != 0,
	}
	ckey := bytes.Clone(rec[18:26])
	rest := rec[emailFixedLen:]
	var fields [4][]byte
	for i := range fields {
		var ok bool
		if fields[i], rest, ok = cutString(rest); !ok {
			return Email{}, nil, errCorrupt
		}
	}
	e.To, e.From, e.FromName = string(fields[0]), string(fields[1]), string(fields[2])
	if flags&flagHasSubject != 0 {
		s := string(fields[3])
		e.Subject = &s
	}
	return e, ckey, nil
}

// recordContentKey returns the content key of an email record.
func recordContentKey(rec []byte) []byte { return rec[18:26] }

// recordID returns the id of an email record.
func recordID(rec []byte) []byte { return rec[2:18] }

func encodeContent(refs int, msg *Message) []byte {
	var flags byte
	body := ""
	if msg.Body != nil {
		flags |= flagHasBody
		body = *msg.Body
	}
	b := binary.AppendUvarint(make([]byte, 0, 16+len(body)+len(msg.Text)), uint64(refs))
	b = append(b, flags)
	b = appendString(b, body)
	b = binary.AppendUvarint(b, uint64(len(msg.Headers)))
	for _, h := range msg.Headers {
		b = appendString(b, strings.ToLower(h.Name))
		b = appendString(b, fold(h.Value))
	}
	b = appendString(b, msg.Plain)
	b = binary.AppendUvarint(b, uint64(len(msg.Links)))
	for _, l := range msg.Links {
		b = appendString(b, l)
	}
	return append(b, fold(msg.Text)...)
}

// content is a decoded content record. Its slices point into the record
// and are valid only inside the transaction: List copies a body only once
// the email matches.
type content struct {
	body    []byte // nil when the message has none
	headers []byte // the encoded header section, for matchHeader
	plain   []byte
	links   []byte // the encoded links section, for decodeLinks
	text    []byte // case-folded search text
}

func decodeContent(rec []byte) (content, error) {
	_, w := binary.Uvarint(rec)
	if w <= 0 || len(rec) < w+1 {
		return content{}, errCorrupt
	}
	flags := rec[w]
	body, rest, ok := cutString(rec[w+1:])
	if !ok {
		return content{}, errCorrupt
	}
	if flags&flagHasBody == 0 {
		body = nil
	}
	n, w := binary.Uvarint(rest)
	if w <= 0 {
		return content{}, errCorrupt
	}
	headers := rest
	rest = rest[w:]
	for range 2 * n {
		if _, rest, ok = cutString(rest); !ok {
			return content{}, errCorrupt
		}
	}
	c := content{body: body, headers: headers[:len(headers)-len(rest)]}
	if c.plain, rest, ok = cutString(rest); !ok {
		return content{}, errCorrupt
	}
	if n, w = binary.Uvarint(rest); w <= 0 {
		return content{}, errCorrupt
	}
	links := rest
	rest = rest[w:]
	for range n {
		if _, rest, ok = cutString(rest); !ok {
			return content{}, errCorrupt
		}
	}
	c.links, c.text = links[:len(links)-len(rest)], rest
	return c, nil
}

// decodeLinks decodes a links section that decodeContent has checked.
func decodeLinks(section []byte) []string {
	n, w := binary.Uvarint(section)
	rest := section[w:]
	links := make([]string, 0, n)
	for range n {
		var l []byte
		l, rest, _ = cutString(rest)
		links = append(links, string(l))
	}
	return links
}

// contentRefs returns the reference count of a content record and the
// length of its encoding.
func contentRefs(rec []byte) (uint64, int) { return binary.Uvarint(rec) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// cutString returns the uvarint-prefixed string at the start of b (a slice
// into b with its capacity capped) and what follows it.
func cutString(b []byte) (s, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, false
	}
	end := w + int(n)
	return b[w:end:end], b[end:], true
}

// bodyString copies a body out of a transaction; nil stays nil.
func bodyString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// fold returns s under Unicode full case folding, the form in which search
// text is stored and compared (so "STRASSE" finds "Straße").
func fold(s string) string {
	return cases.Fold().String(s)
}

// matcher holds a Query's filters, folded once per List.
type matcher struct {
	subject, body string
	terms         []string
	header        *Header // name lower-cased, value folded
}

func newMatcher(q Query) matcher {
	m := matcher{subject: fold(q.Subject), body: fold(q.Body)}
	for _, t := range q.Terms {
		if t != "" {
			m.terms = append(m.terms, fold(t))
		}
	}
	if q.Header != nil {
		m.header = &Header{Name: strings.ToLower(q.Header.Name), Value: fold(q.Header.Value)}
	}
	return m
}

func (m *matcher) match(e *Email, c *content) bool {
	if m.subject != "" && (e.Subject == nil || !strings.Contains(fold(*e.Subject), m.subject)) {
		return false
	}
	if m.body != "" && !bytes.Contains(c.text, []byte(m.body)) {
		return false
	}
	if m.header != nil && !matchHeader(c.headers, m.header) {
		return false
	}
	if len(m.terms) == 0 {
		return true
	}
	subject := ""
	if e.Subject != nil {
		subject = fold(*e.Subject)
	}
	name, from := fold(e.FromName), fold(e.From)
	for _, t := range m.terms {
		if !strings.Contains(subject, t) && !strings.Contains(name, t) &&
			!strings.Contains(from, t) && !bytes.Contains(c.text, []byte(t)) {
			return false
		}
	}
	return true
}

// matchHeader reports whether an encoded header section has a field named
// want.Name whose value contains want.Value.
func matchHeader(section []byte, want *Header) bool {
	n, w := binary.Uvarint(section)
	rest := section[w:]
	for range n {
		var name, value []byte
		name, rest, _ = cutString(rest)
		value, rest, _ = cutString(rest)
		if string(name) == want.Name && bytes.Contains(value, []byte(want.Value)) {
			return true
		}
	}
	return false
}
