package postgres

import (
	"encoding/binary"
	"strings"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"
)

// The lists of a message are bytea columns, encoded as every engine
// encodes them (record.AppendHeaders, record.AppendStrings):
//
//	headers: name, value for each top-level header field: the name
//	         lower-cased, the value folded (match.AppendFold), so that
//	         SQL can prefilter on both and the Matcher, whose lower-casing
//	         and folding are idempotent, decides as on the field received
//	links:   each link target of the body, in order
//
// bytea, not text[]: header values come from mail and may hold NUL.

// encodeHeaders returns the header section (record.AppendHeaders) of hs,
// names lower-cased and values folded.
func encodeHeaders(hs []storage.Header) []byte {
	b := binary.AppendUvarint(nil, uint64(len(hs)))
	var folded []byte
	for _, h := range hs {
		folded = match.AppendFold(folded[:0], h.Value)
		b = record.AppendString(record.AppendString(b, strings.ToLower(h.Name)), folded)
	}
	return b
}

// foldedSender is what the search terms look at besides the subject and
// the search text: the sender's name and address, folded, on two lines.
// A term found in it across the line break is a prefilter's false
// positive, which the Matcher then drops.
func foldedSender(fromName, from string) []byte {
	b := match.AppendFold(nil, fromName)
	b = append(b, '\n')
	return match.AppendFold(b, from)
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
