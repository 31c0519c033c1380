package message

import (
	"strings"
	"testing"
)

// TestNormalizeNewlines checks normalizeNewlines against the Replacer it
// replaced.
func TestNormalizeNewlines(t *testing.T) {
	ref := strings.NewReplacer("\r\n", "\n", "\r", "\n")
	for _, s := range []string{
		"", "a", "\r", "\n", "\r\n", "\n\r", "\r\r\n", "\r\n\r\n", "a\rb\r\nc\nd\r", "\r\r\r", "x\r\n\ny\r\r\nz",
	} {
		if got, want := normalizeNewlines(s), ref.Replace(s); got != want {
			t.Errorf("normalizeNewlines(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestJoinText checks joinText against joining each pair in turn, as the
// text was joined before.
func TestJoinText(t *testing.T) {
	pair := func(a, b string) string {
		switch {
		case a == "":
			return b
		case b == "":
			return a
		}
		return a + "\n" + b
	}
	for _, text := range []string{"", "seen text"} {
		for _, links := range [][]string{nil, {"https://a.test/"}, {"https://a.test/", "https://b.test/x"}} {
			for _, plain := range []string{"", "plain\npart"} {
				want := pair(pair(text, strings.Join(links, "\n")), plain)
				if got := joinText(text, links, plain); got != want {
					t.Errorf("joinText(%q, %q, %q) = %q, want %q", text, links, plain, got, want)
				}
			}
		}
	}
}
