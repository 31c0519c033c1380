package match

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestAppendFold(t *testing.T) {
	for _, s := range []string{
		"", "plain ascii", "MiXeD Case 123", "Straße STRASSE", "ΣΊΣΥΦΟΣ ς", "ﬁ ligature", "İstanbul",
		"K\u212a Kelvin", "emoji 😀 and Ⅻ", "\xff\xfe invalid \xc3", "ǅ titlecase", "ａｂｃ ＡＢＣ",
	} {
		if got, want := string(AppendFold(nil, s)), Fold(s); got != want {
			t.Errorf("appendFold(%q) = %q, want fold's %q", s, got, want)
		}
	}
}

// TestLowerASCII checks the eight-byte lower-casing against the byte at a
// time, for every ASCII byte in every place of a word.
func TestLowerASCII(t *testing.T) {
	for c := range 0x80 {
		for at := range 8 {
			w := [8]byte{'@', 'A', 'Z', '[', '`', 'a', 'z', '{'}
			w[at] = byte(c)
			want := w
			for i, b := range want {
				if 'A' <= b && b <= 'Z' {
					want[i] = b + 'a' - 'A'
				}
			}
			got := binary.LittleEndian.AppendUint64(nil, lowerASCII(binary.LittleEndian.Uint64(w[:])))
			if string(got) != string(want[:]) {
				t.Fatalf("lowerASCII(%q) = %q, want %q", w, got, want)
			}
		}
	}
}

func FuzzAppendFold(f *testing.F) {
	f.Add("Straße")
	f.Add("ΣΊΣΥΦΟΣ")
	f.Add("The Quick Brown Fox, ÉTÉ @[`{ Jumps Over THE LAZY DOG")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendFold([]byte("x"), s)), "x"+Fold(s); got != want {
			t.Fatalf("appendFold(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestAppendSearchText(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", ""},
		{"One\nTwo", "one\ntwo"},
		// The plain part repeats the text of the HTML, wrapped otherwise.
		{"Hello Alice,\nYour order has shipped. Track it.\nhttps://x.test/1\nHello Alice,\n\nYour order has\nshipped. Track it: https://x.test/1",
			"hello alice,\nyour order has shipped. track it.\nhttps://x.test/1\nshipped. track it: https://x.test/1"},
		{"a\n\n\nb\na", "a\nb"},
	} {
		if got := string(AppendSearchText(nil, tc.text)); got != tc.want {
			t.Errorf("appendSearchText(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	// Many distinct short lines: bounded work, every line kept.
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, "%x\n", i*7919)
	}
	got := AppendSearchText(nil, b.String())
	if n := bytes.Count(got, []byte("\n")); n < 150_000 {
		t.Errorf("appendSearchText of 200,000 distinct lines kept %d", n+1)
	}
}

// appendSearchTextScan is AppendSearchText as it was first written, each
// line looked for with bytes.Contains in all the text kept before it: the
// reference its line index must agree with.
func appendSearchTextScan(dst []byte, text string) []byte {
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

// TestAppendSearchTextAsScanned holds the line index to the plain scan on
// texts that stress it: lines of one repeated word (long hash chains),
// lines shorter than four bytes, lines found only past the start of a kept
// line, and a text past the dedup budget (realistic mail: in
// TestAppendSearchTextOfMail).
func TestAppendSearchTextAsScanned(t *testing.T) {
	texts := []string{"", "abc\nab\nabc", "abcd\nbcd\ncd\nd\nabcde\nbcde"}
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "%s\n", strings.Repeat("word ", i%40+1))
		fmt.Fprintf(&b, "%s\n", strings.Repeat("wor", i%7))
	}
	texts = append(texts, b.String())
	b.Reset()
	for i := range 60_000 {
		fmt.Fprintf(&b, "line %d of many, %x\n", i%5000, i%977)
	}
	texts = append(texts, b.String())
	for _, text := range texts {
		got, want := AppendSearchText([]byte("x"), text), appendSearchTextScan([]byte("x"), text)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendSearchText(%.80q…) = %.200q…, the scan gives %.200q…", text, got, want)
		}
	}
}

func FuzzAppendSearchText(f *testing.F) {
	f.Add("Hello Alice,\nYour order has shipped.\nYour order\nhas shipped.")
	f.Add("aaaa\naaaaa\naaa\naaaab")
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := AppendSearchText(nil, text), appendSearchTextScan(nil, text); !bytes.Equal(got, want) {
			t.Fatalf("AppendSearchText(%q) = %q, the scan gives %q", text, got, want)
		}
	})
}

// TestFoldConcurrently: fold shares one Caser between goroutines, which is
// safe only while x/text's Fold keeps no state; -race says if that changes.
func TestFoldConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if got := Fold("Straße ÅNGSTRÖM"); got != "strasse ångström" {
					t.Errorf("fold = %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}
