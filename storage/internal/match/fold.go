package match

import (
	"bytes"
	"strings"
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
// ASCII, most of any mail's text, is lower-cased in place and only the runs
// of other runes go through the Caser.
func AppendFold[S ~string | ~[]byte](dst []byte, s S) []byte {
	for i := 0; i < len(s); {
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
	folded := AppendFold(make([]byte, 0, len(text)), text)
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
			if bytes.Contains(kept, line) {
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
