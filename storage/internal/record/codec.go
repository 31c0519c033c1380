// Package record encodes what every engine stores alike, so that both
// read what `burner copy` moves between them as it is and the shared
// Matcher reads either's: uvarint-prefixed strings, header sections and
// string lists, the attachment index, times as unix milliseconds and the
// ids of new emails, authentication records (auth.go); and it checks what
// an import brings (clean.go).
package record

import (
	"encoding/binary"
	"errors"
	"time"

	"burner/storage"
)

// The pieces of a record that every engine encodes alike: strings
// prefixed by their length as a uvarint, and lists of them. A header
// section is
//
//	uvarint(number of fields) then uvarint-prefixed: name, value for each
//
// and a string list (the links of a message) is
//
//	uvarint(number of strings) then each string uvarint-prefixed
//
// so that `burner copy` and the shared Matcher read either engine's the
// same way.

// AppendString appends s, uvarint-prefixed, to b.
func AppendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// CutString returns the uvarint-prefixed string at the start of b (a
// slice into b with its capacity capped, so that an append to it does not
// overwrite what follows) and what follows it; ok is false when b does
// not start with one.
func CutString(b []byte) (s, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, false
	}
	end := w + int(n)
	return b[w:end:end], b[end:], true
}

// AppendHeaders appends the header section of hs to b, names and values
// as given.
func AppendHeaders(b []byte, hs []storage.Header) []byte {
	b = binary.AppendUvarint(b, uint64(len(hs)))
	for _, h := range hs {
		b = AppendString(b, h.Name)
		b = AppendString(b, h.Value)
	}
	return b
}

// CutHeaders returns the header section at the start of b and what
// follows it; ok is false when b does not start with one.
func CutHeaders(b []byte) (section, rest []byte, ok bool) {
	return cutList(b, 2)
}

// AppendStrings appends the string list of ss to b.
func AppendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = AppendString(b, s)
	}
	return b
}

// CutStrings returns the string list at the start of b and what follows
// it; ok is false when b does not start with one.
func CutStrings(b []byte) (list, rest []byte, ok bool) {
	return cutList(b, 1)
}

// DecodeStrings decodes a string list that is the whole of b, or returns
// an error wrapping storage.ErrCorrupt.
func DecodeStrings(b []byte) ([]string, error) {
	n, w := binary.Uvarint(b)
	// Each string takes a byte at least: a count beyond that is damage,
	// not a reason to allocate.
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, storage.ErrCorrupt
	}
	rest := b[w:]
	var out []string // nil for none, as a Message without links has
	if n > 0 {
		out = make([]string, 0, n)
	}
	for range n {
		var s []byte
		var ok bool
		if s, rest, ok = CutString(rest); !ok {
			return nil, storage.ErrCorrupt
		}
		out = append(out, string(s))
	}
	if len(rest) != 0 {
		return nil, storage.ErrCorrupt
	}
	return out, nil
}

// cutList returns the list at the start of b, a uvarint count of items
// of per strings each, and what follows it.
func cutList(b []byte, per uint64) (list, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, false
	}
	rest = b[w:]
	for range per * n {
		if _, rest, ok = CutString(rest); !ok {
			return nil, nil, false
		}
	}
	return b[:len(b)-len(rest)], rest, true
}

// Every store keeps times as unix milliseconds, the precision of
// receivedAt in the API.

// Milli returns t in UTC, truncated to the millisecond: the time a store
// gives back for t.
func Milli(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// FromMilli returns the time of ms unix milliseconds, in UTC.
func FromMilli(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// FloorMilli returns t in unix milliseconds, rounded down.
func FloorMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Before(time.UnixMilli(ms)) {
		ms--
	}
	return ms
}

// CeilMilli returns t in unix milliseconds, rounded up: the first stored
// time not before t.
func CeilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// reader reads the pieces of a record in turn; past the first that does
// not decode, err is set and every read gives nothing.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("short")

func (d *reader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	n, w := binary.Uvarint(d.b)
	if w <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[w:]
	return n
}

func (d *reader) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// bytes reads a string, in place.
func (d *reader) bytes() []byte {
	if d.err != nil {
		return nil
	}
	s, rest, ok := CutString(d.b)
	if !ok {
		d.err = errShort
		return nil
	}
	d.b = rest
	return s
}

func (d *reader) string() string { return string(d.bytes()) }

// count reads a count of items of at least min bytes each: one beyond
// what is left is damage, not a reason to allocate.
func (d *reader) count(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) {
		d.err = errShort
		return 0
	}
	return int(n)
}
