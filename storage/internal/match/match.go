// Package match decides which emails the filters of a storage.Query take:
// Unicode case folding, the search text an engine stores, the trigram
// signatures that let an engine rule emails out unread, and the Matcher
// that decides. Every engine lets it decide, so that two engines answer
// byte for byte alike; an engine may prefilter (an index, SQL) as long as
// it never drops an email the Matcher takes.
package match

import (
	"bytes"
	"encoding/binary"
	"strings"

	"burner/storage"
	"burner/storage/internal/record"
)

// Matcher decides whether an email matches the filters of a
// storage.Query: subject, sender, body, search terms and header (spec
// §4, §5, §14).
//
// It holds the filters, folded once, and the buffers it folds an email's
// fields into, so it is used by one goroutine at a time: a parallel scan
// makes one per goroutine.
type Matcher struct {
	subject, from, body []byte
	terms               [][]byte
	header              *storage.Header // name lower-cased, value folded

	subjectGrams, fromGrams, bodyGrams []uint32   // GramHashes of subject, sender and body
	termGrams                          [][]uint32 // GramHashes of each term

	subjectBuf, nameBuf, fromBuf []byte // the fields of the email at hand, folded
	hnameBuf, hvalueBuf          []byte // the header field at hand, lower-cased and folded
}

// New returns the Matcher of q's filters.
func New(q storage.Query) *Matcher {
	m := &Matcher{}
	if q.Subject != "" {
		m.subject = []byte(Fold(q.Subject))
		m.subjectGrams = GramHashes(m.subject)
	}
	if q.From != "" {
		m.from = []byte(Fold(q.From))
		m.fromGrams = GramHashes(m.from)
	}
	if q.Body != "" {
		m.body = []byte(Fold(q.Body))
		m.bodyGrams = GramHashes(m.body)
	}
	for _, t := range q.Terms {
		if t != "" {
			m.terms = append(m.terms, []byte(Fold(t)))
			m.termGrams = append(m.termGrams, GramHashes(m.terms[len(m.terms)-1]))
		}
	}
	if q.Header != nil {
		m.header = &storage.Header{Name: strings.ToLower(q.Header.Name), Value: Fold(q.Header.Value)}
	}
	return m
}

// ReadsText reports whether the filters read the search text (or the
// headers) of every email they consider.
func (m *Matcher) ReadsText() bool {
	return m.body != nil || m.header != nil || len(m.terms) > 0
}

// ReadsHeaders reports whether there is a header filter (MatchHeader).
func (m *Matcher) ReadsHeaders() bool { return m.header != nil }

// MatchSubject applies the subject filter to subject, nil when the email
// has none.
func (m *Matcher) MatchSubject(subject []byte) bool {
	if m.subject == nil {
		return true
	}
	if subject == nil {
		return false
	}
	m.subjectBuf = AppendFold(m.subjectBuf[:0], subject)
	return bytes.Contains(m.subjectBuf, m.subject)
}

// MatchSender applies the sender filter to the sender's display name and
// address. With a sender filter or search terms, it folds them for the
// terms (MatchFields).
func (m *Matcher) MatchSender(fromName, from []byte) bool {
	if m.from == nil && len(m.terms) == 0 {
		return true
	}
	m.nameBuf = AppendFold(m.nameBuf[:0], fromName)
	m.fromBuf = AppendFold(m.fromBuf[:0], from)
	return m.from == nil || bytes.Contains(m.nameBuf, m.from) || bytes.Contains(m.fromBuf, m.from)
}

// MatchFields applies the filters that an email's own fields decide (the
// subject, nil when it has none, and the sender) and folds the fields the
// search terms look at. It reports whether the email may match, and
// whether its text must be read to tell (MatchText).
func (m *Matcher) MatchFields(subject, fromName, from []byte) (ok, needText bool) {
	if !m.MatchSubject(subject) || !m.MatchSender(fromName, from) {
		return false, false
	}
	needText = m.body != nil || m.header != nil
	if len(m.terms) > 0 {
		m.subjectBuf = AppendFold(m.subjectBuf[:0], subject)
		for _, t := range m.terms {
			if !m.inFields(t) {
				needText = true // the body text must hold it
				break
			}
		}
	}
	return true, needText
}

func (m *Matcher) inFields(t []byte) bool {
	return bytes.Contains(m.subjectBuf, t) || bytes.Contains(m.nameBuf, t) || bytes.Contains(m.fromBuf, t)
}

// MatchText applies the body filter and the search terms, after a
// MatchFields of the same email that asked for its text. text is the
// email's search text (AppendSearchText). With ReadsHeaders, the email
// also needs a field that MatchHeader takes.
func (m *Matcher) MatchText(text []byte) bool {
	if m.body != nil && !bytes.Contains(text, m.body) {
		return false
	}
	for _, t := range m.terms {
		if !m.inFields(t) && !bytes.Contains(text, t) {
			return false
		}
	}
	return true
}

// Prefilters reports whether a signature can rule emails out of the
// filters: one of them, subject, sender, body or a search term, has a
// trigram.
func (m *Matcher) Prefilters() bool {
	if len(m.subjectGrams) > 0 || len(m.fromGrams) > 0 || len(m.bodyGrams) > 0 {
		return true
	}
	for _, hs := range m.termGrams {
		if len(hs) > 0 {
			return true
		}
	}
	return false
}

// NeedleGrams returns the GramHashes of each filter a signature tests (subject,
// sender, body, each search term), those with none left out: an email whose
// signature lacks one hash of one of them cannot match. It is for an engine
// that tests signatures elsewhere (SQL), which must not change the hashes (they
// are the Matcher's own).
func (m *Matcher) NeedleGrams() [][]uint32 {
	var out [][]uint32
	for _, hs := range append([][]uint32{m.subjectGrams, m.fromGrams, m.bodyGrams}, m.termGrams...) {
		if len(hs) > 0 {
			out = append(out, hs)
		}
	}
	return out
}

// MayMatch reports whether an email whose signature is sig, from
// EmailSignature, may match the subject, sender and body filters and the
// search terms: false only when it cannot (a signature holds the trigrams
// of the sender's name and address too), so that an engine may rule the
// email out from its signature alone, before it folds a field or decodes
// a text. It does not consider the header filter.
func (m *Matcher) MayMatch(sig []byte) bool {
	if len(sig) == 0 {
		return true
	}
	if !SignatureHas(sig, m.subjectGrams) || !SignatureHas(sig, m.fromGrams) || !SignatureHas(sig, m.bodyGrams) {
		return false
	}
	for _, hs := range m.termGrams {
		if !SignatureHas(sig, hs) {
			return false
		}
	}
	return true
}

// MatchHeader reports whether a header field, its name and value as
// received (or already lower-cased and folded: folding is idempotent),
// is one the header filter asks for: named m.header.Name in any case,
// with a value that holds m.header.Value case-folded. An email matches
// when one of its fields does.
func (m *Matcher) MatchHeader(name, value []byte) bool {
	m.hnameBuf = appendLower(m.hnameBuf[:0], name)
	if string(m.hnameBuf) != m.header.Name {
		return false
	}
	m.hvalueBuf = AppendFold(m.hvalueBuf[:0], value)
	return bytes.Contains(m.hvalueBuf, []byte(m.header.Value))
}

// MatchHeaders reports whether a field of an encoded header section
// matches m's header filter (MatchHeader), or an error wrapping
// storage.ErrCorrupt when the section is damaged (record.AppendHeaders
// writes it).
func (m *Matcher) MatchHeaders(section []byte) (bool, error) {
	n, w := binary.Uvarint(section)
	if w <= 0 {
		return false, storage.ErrCorrupt
	}
	rest := section[w:]
	for range n {
		var name, value []byte
		var ok bool
		if name, rest, ok = record.CutString(rest); !ok {
			return false, storage.ErrCorrupt
		}
		if value, rest, ok = record.CutString(rest); !ok {
			return false, storage.ErrCorrupt
		}
		if m.MatchHeader(name, value) {
			return true, nil
		}
	}
	return false, nil
}
