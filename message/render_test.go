package message

import (
	"bytes"
	"strings"
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

// TestBodyHasNoControls: no C0 control but tab, LF and CR reaches a body,
// whichever way the body is made (spec §3: body is HTML, which cannot
// carry them), and a NUL reaches neither the body nor the text.
func TestBodyHasNoControls(t *testing.T) {
	p := New(0)
	for _, tc := range []struct {
		name, raw string
		body      string // the body wanted
		plain     string // what /text serves
	}{
		{"html raw", "Content-Type: text/html\r\n\r\n<p>a\x00b\x01c\x1bd\x0ce\x0bf\tg<img alt=\"i\x01\x0cj\" src=\"http://x.test/i\"></p>\r\n", `<p>abcd e f	g<img src="http://x.test/i"></p>`, "abcd e f g"},
		{"html references", "Content-Type: text/html\r\n\r\n<p>a&#0;b&#1;c&#x1b;d&#12;e</p>\r\n", "<p>a\uFFFDbcd e</p>", "a\uFFFDbcd e"},
		{"plain", "Content-Type: text/plain\r\n\r\na\x00b\x01c\x1bd\x0ce\r\nnext\x7f\r\n", "abcd e<br>next\x7f", "ab\x01c\x1bd\x0ce\nnext\x7f"},
		{"plain utf-16", "Content-Type: text/plain; charset=utf-16le\r\nContent-Transfer-Encoding: base64\r\n\r\nYQABAGIA\r\n", "ab", "a\x01b"},
		// The text of an enclosed message with binary bytes.
		{"enclosed binary", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: message/rfc822\r\n\r\n" +
			"Subject: inner\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: binary\r\n\r\n<b>x\x00\x02\x03\x04y</b>\r\n--b--\r\n", "<b>xy</b>", "xy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := p.Parse([]byte("From: a@b.test\r\nSubject: s\r\n"+tc.raw), goldenEnvelope)
			if m.Body == nil || *m.Body != tc.body {
				t.Errorf("parse(%q).Body = %q, want %q", tc.raw, deref(m.Body), tc.body)
			}
			if m.Plain != tc.plain {
				t.Errorf("parse(%q).Plain = %q, want %q", tc.raw, m.Plain, tc.plain)
			}
			if strings.ContainsRune(m.Text, 0) {
				t.Errorf("parse(%q).Text = %q, holds a NUL", tc.raw, m.Text)
			}
		})
	}
}

// dropControlsByte is dropControls a byte at a time: the reference for
// its eight-byte scan.
func dropControlsByte(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\v' || c == '\f':
			b.WriteByte(' ')
		case !isDroppedControl(c):
			b.WriteByte(c)
		}
	}
	return b.String()
}

func FuzzDropControls(f *testing.F) {
	f.Add("plain text of a few words\r\n\tand more, with a \x01 late")
	f.Add("\x1f\x20\x7f\x80\xff\x00 0123456789abcdef\x1b")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := dropControls(s), dropControlsByte(s); got != want {
			t.Fatalf("dropControls(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestDropControls(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"plain text\r\n\tok":     "plain text\r\n\tok",
		"\x00\x01\x1f":           "",
		"a\vb\fc":                "a b c",
		"é\x00ü\x7f\u0085":       "éü\x7f\u0085",
		"<p>\x1b[31mred</p>\x00": "<p>[31mred</p>",
	} {
		if got := dropControls(in); got != want {
			t.Errorf("dropControls(%q) = %q, want %q", in, got, want)
		}
	}
}
