package message

import (
	"bytes"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/atom"
)

// tidyLinesRune is tidyLines as it was first written, a rune at a time:
// the reference the word-at-a-time version must match.
func tidyLinesRune(s []byte) string {
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		var line []byte
		line, s, _ = bytes.Cut(s, []byte{'\n'})
		words, space := false, false
		for i := 0; i < len(line); {
			r, n := rune(line[i]), 1
			if r >= utf8.RuneSelf {
				r, n = utf8.DecodeRune(line[i:])
			}
			if unicode.IsSpace(r) {
				space = true
			} else {
				switch {
				case !words && len(out) > 0:
					out = append(out, '\n')
				case words && space:
					out = append(out, ' ')
				}
				out = append(out, line[i:i+n]...)
				words, space = true, false
			}
			i += n
		}
	}
	return string(out)
}

var tidyInputs = []string{
	"", " ", "\n\n", "a", " a  b \n\n c\td \n", "\u00a0x\u2003y\u0085z\u3000",
	"\xff \xfe\x80 a", "a\v\fb\r\nc", "é  ü\n\n\n  ß", "\xe2\x80", "\xe2\x80\x83a",
}

func TestTidyLinesWordAtATime(t *testing.T) {
	for _, in := range tidyInputs {
		if got, want := tidyLines([]byte(in)), tidyLinesRune([]byte(in)); got != want {
			t.Errorf("tidyLines(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzTidyLines(f *testing.F) {
	for _, in := range tidyInputs {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if got, want := tidyLines([]byte(in)), tidyLinesRune([]byte(in)); got != want {
			t.Errorf("tidyLines(%q) = %q, want %q", in, got, want)
		}
	})
}

// TestElementSets checks that blockElements, keyed by atom, holds the
// elements it was written for, by name.
func TestElementSets(t *testing.T) {
	for _, name := range []string{
		"address", "article", "aside", "blockquote", "br", "caption", "center", "dd", "details", "div",
		"dl", "dt", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6",
		"header", "hgroup", "hr", "li", "ol", "p", "pre", "section", "summary", "table", "tbody",
		"td", "tfoot", "th", "thead", "tr", "ul",
	} {
		if a := atom.Lookup([]byte(name)); a == 0 || a.String() != name || !blockElements[a] {
			t.Errorf("%s is not a block element", name)
		}
	}
	if len(blockElements) != 38 {
		t.Errorf("%d block elements, want 38", len(blockElements))
	}
	for _, name := range []string{"a", "span", "b", "img", "font", "x-custom"} {
		if blockElements[atom.Lookup([]byte(name))] {
			t.Errorf("%s is a block element", name)
		}
	}
}
