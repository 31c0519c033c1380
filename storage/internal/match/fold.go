package match

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// folder is Unicode full case folding, shared by every goroutine. x/text
// warns that a Caser "may be stateful"; Fold's is not (its transformer is
// an empty struct with a no-op Reset), and TestFoldConcurrently keeps that
// true under -race for the version in go.mod.
var folder = cases.Fold()

// Fold returns s under Unicode full case folding, the form in which search
// text is stored and compared (so "STRASSE" finds "Straße").
func Fold(s string) string {
	return folder.String(s)
}

// AppendFold appends Fold(s) to dst. Folding maps each rune on its own, so
// ASCII, most of any mail's text, is lower-cased in place, eight bytes at a
// time, and only the runs of other runes go through the Caser.
func AppendFold[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = slices.Grow(dst, len(s))
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if w&highBits == 0 {
				dst = binary.LittleEndian.AppendUint64(dst, lowerASCII(w))
				i += 8
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		j := i + 1
		for j < len(s) && s[j] >= utf8.RuneSelf {
			j++
		}
		dst = append(dst, folder.String(string(s[i:j]))...)
		i = j
	}
	return dst
}

// highBits has the high bit of each of eight bytes: a word of ASCII has
// none of them.
const highBits = 0x8080808080808080

// lowerASCII lower-cases the eight ASCII bytes of w at once: a byte from
// 'A' to 'Z' gains 0x20. Adding 0x80-'A' to a byte under 0x80 sets its high
// bit when it is 'A' or more, adding 0x80-'Z'-1 when it is past 'Z'; no
// sum carries into the next byte.
func lowerASCII(w uint64) uint64 {
	const ones = 0x0101010101010101
	upper := (w + ones*(0x80-'A')) &^ (w + ones*(0x80-'Z'-1)) & highBits
	return w | upper>>2
}

// appendLower appends strings.ToLower(s) to dst, without allocating when s
// is ASCII, as header names are.
func appendLower[S ~string | ~[]byte](dst []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return append(dst[:len(dst)-i], strings.ToLower(string(s))...)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// maxDedupScan bounds the bytes AppendSearchText compares while it looks
// for repeated lines, so that a hostile text of many short lines costs
// linear time: past it, the rest of the lines are kept as they are.
const maxDedupScan = 1 << 20

// AppendSearchText appends the search text of text (Message.Text) to dst:
// what the body filter and search look in. It is text case-folded, without
// empty lines and without the lines that the text kept before them already
// holds. The plain part of a multipart/alternative message mostly repeats
// the text of its HTML part, and a substring found in a line that is
// dropped is found where it was kept (a search for text across the line
// break that ends a dropped line is what is lost), so this halves the
// search text of most mail and the bytes a body filter reads. Engines store
// it and give it to Matcher.MatchText as it is.
func AppendSearchText(dst []byte, text string) []byte {
	start := len(dst)
	ix := lineIndexes.Get().(*lineIndex)
	defer ix.release()
	ix.folded = AppendFold(ix.folded[:0], text)
	folded := ix.folded
	budget := maxDedupScan
	for len(folded) > 0 {
		var line []byte
		line, folded, _ = bytes.Cut(folded, []byte{'\n'})
		if len(line) == 0 {
			continue
		}
		kept := dst[start:]
		if budget > 0 {
			budget -= len(kept)
			if ix.contains(kept, line) {
				continue
			}
		}
		if len(kept) > 0 {
			dst = append(dst, '\n')
		}
		dst = append(dst, line...)
	}
	return dst
}

// lineIndex answers AppendSearchText's question, whether the text kept so
// far holds a line, as bytes.Contains does, without scanning the kept text
// for each line: that scan made the dedup quadratic, a tenth of a
// newsletter's delivery. It chains the positions of the kept text that are
// multiples of lineStride by the hash of the four bytes there (as zlib
// chains its matches). A line found at p has one of its first lineStride
// positions, p+j, on a multiple of the stride, so the line is looked for
// only where its four bytes at j are, for each j. A line too short for
// that, or whose bytes are too common to follow, goes to bytes.Contains.
// The text is only ever appended to, so what is indexed stays true.
type lineIndex struct {
	head   [1 << lineHashBits]int32 // 1 + the last indexed position with each hash; 0: none
	prev   []int32                  // prev[i/lineStride]: 1 + the indexed position before i with its hash
	end    int                      // the positions before end are indexed
	folded []byte                   // AppendSearchText's folded text, the lines it takes
}

const (
	lineHashBits = 12
	lineStride   = 4
	// maxLineCandidates bounds the positions a line is compared at before
	// bytes.Contains decides instead: a text of one repeated word has
	// thousands of positions with one hash.
	maxLineCandidates = 16
	// maxPooledLineIndex bounds the chain kept for reuse, in positions,
	// and the folded text, in bytes.
	maxPooledLineIndex = 1 << 16
)

var lineIndexes = sync.Pool{New: func() any { return new(lineIndex) }}

func (ix *lineIndex) release() {
	if cap(ix.prev) > maxPooledLineIndex || cap(ix.folded) > maxPooledLineIndex {
		return
	}
	clear(ix.head[:])
	ix.prev, ix.end = ix.prev[:0], 0
	lineIndexes.Put(ix)
}

func lineHash(b uint32) uint32 {
	return b * 0x9e3779b1 >> (32 - lineHashBits)
}

// contains reports whether kept holds line. kept is what the previous call
// was given, with more appended.
func (ix *lineIndex) contains(kept, line []byte) bool {
	for ; ix.end+4 <= len(kept); ix.end += lineStride {
		h := lineHash(binary.LittleEndian.Uint32(kept[ix.end:]))
		ix.prev = append(ix.prev, ix.head[h])
		ix.head[h] = int32(ix.end + 1)
	}
	if len(line) < lineStride+3 {
		return bytes.Contains(kept, line)
	}
	candidates := 0
	for j := range lineStride {
		for p := ix.head[lineHash(binary.LittleEndian.Uint32(line[j:]))]; p != 0; p = ix.prev[(p-1)/lineStride] {
			if candidates++; candidates > maxLineCandidates {
				return bytes.Contains(kept, line)
			}
			at := int(p-1) - j
			if at >= 0 && at+len(line) <= len(kept) && bytes.Equal(kept[at:at+len(line)], line) {
				return true
			}
		}
	}
	// Every indexed position holding one of line's first four-byte
	// windows was looked at.
	return false
}
