package postgres

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"burner/storage"
)

// The lists of a message are bytea columns, each a uvarint count and then
// uvarint-prefixed strings:
//
//	headers: name, value for each top-level header field: the name
//	         lower-cased, the value folded (storage.AppendFold), so that
//	         SQL can prefilter on both and the Matcher, whose lower-casing
//	         and folding are idempotent, decides as on the field received
//	links:   each link target of the body, in order
//
// bytea, not text[]: header values come from mail and may hold NUL.

var errCorrupt = errors.New("storage: corrupt record")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func cutString(b []byte) (s, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

func encodeHeaders(hs []storage.Header) []byte {
	b := binary.AppendUvarint(nil, uint64(len(hs)))
	var folded []byte
	for _, h := range hs {
		folded = storage.AppendFold(folded[:0], h.Value)
		b = appendString(appendString(b, strings.ToLower(h.Name)), string(folded))
	}
	return b
}

// matchHeaders reports whether a header field of the encoded section
// matches the header filter of m.
func matchHeaders(m *storage.Matcher, section []byte) (bool, error) {
	n, k := binary.Uvarint(section)
	if k <= 0 {
		return false, errCorrupt
	}
	rest := section[k:]
	for range n {
		var name, value []byte
		var ok bool
		if name, rest, ok = cutString(rest); !ok {
			return false, errCorrupt
		}
		if value, rest, ok = cutString(rest); !ok {
			return false, errCorrupt
		}
		if m.MatchHeader(name, value) {
			return true, nil
		}
	}
	return false, nil
}

func encodeLinks(links []string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(links)))
	for _, l := range links {
		b = appendString(b, l)
	}
	return b
}

func decodeLinks(b []byte) ([]string, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errCorrupt
	}
	rest := b[k:]
	var out []string
	for range n {
		var l []byte
		var ok bool
		if l, rest, ok = cutString(rest); !ok {
			return nil, errCorrupt
		}
		out = append(out, string(l))
	}
	return out, nil
}

// foldedSender is what the search terms look at besides the subject and
// the search text: the sender's name and address, folded, on two lines.
// A term found in it across the line break is a prefilter's false
// positive, which the Matcher then drops.
func foldedSender(fromName, from string) []byte {
	b := storage.AppendFold(nil, fromName)
	b = append(b, '\n')
	return storage.AppendFold(b, from)
}

// stringPtr returns b as a *string, nil for a NULL column.
func stringPtr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// bytesOf returns the bytes of s, nil (NULL) when s is nil.
func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// An attachment index (messages.attachments) is encoded as every engine
// encodes it (storage.EncodeAttachments), so that `burner copy` moves it
// as it is; damage is reported as this engine's errCorrupt.
func encodeParts(a storage.Attachments) []byte { return storage.EncodeAttachments(a) }

func decodeParts(v []byte) (storage.Attachments, bool, error) {
	a, ok, err := storage.DecodeAttachments(v)
	if err != nil {
		return storage.Attachments{}, false, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return a, ok, nil
}
