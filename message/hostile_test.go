package message

import (
	"strings"
	"testing"
	"unicode/utf8"

	"burner/internal/hostile"
	"burner/storage"
)

// TestHostileMessagesBounded checks what each pathological shape keeps:
// body, text and plain text within the cap (a cut body closes what it
// opened and ends with the marker), links no more than the body holds.
func TestHostileMessagesBounded(t *testing.T) {
	p := New(64 << 10) // smaller than the default, so that every shape is cut
	for _, shape := range hostile.Shapes {
		t.Run(shape.Name, func(t *testing.T) {
			raw := shape.Make()
			if len(raw) > 10<<20 {
				t.Fatalf("the shape is %d bytes, more than max_message_bytes", len(raw))
			}
			m, err := p.Parse(raw, "env@b.test")
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if m.Body != nil {
				body := *m.Body
				// The end tags of what the cut left open are within the cap.
				if len(body) > p.maxBody+len(storage.CutMark) {
					t.Errorf("body is %d bytes, cap %d", len(body), p.maxBody)
				}
				if len(raw) > 4*p.maxBody && strings.HasPrefix(shape.Name, "plain") && !strings.HasSuffix(body, storage.CutMark) {
					t.Errorf("a plain body past the cap does not end with the cut mark: ...%q", body[max(0, len(body)-80):])
				}
				if !utf8.ValidString(body) {
					t.Errorf("body is not valid UTF-8")
				}
			}
			if len(m.Text) > p.maxBody {
				t.Errorf("text is %d bytes, cap %d", len(m.Text), p.maxBody)
			}
			if len(m.Plain) > p.maxBody+len(storage.CutText) {
				t.Errorf("plain text is %d bytes, cap %d", len(m.Plain), p.maxBody)
			}
			links := 0
			for _, l := range m.Links {
				links += len(l)
			}
			if m.Body != nil && links > len(*m.Body) {
				t.Errorf("links hold %d bytes, more than the body's %d", links, len(*m.Body))
			}
			if m.Subject != nil && len(*m.Subject) > 1<<20 {
				t.Errorf("subject is %d bytes", len(*m.Subject))
			}
		})
	}
}

// TestCutBodyClosesElements checks that a body cut in the middle of nested
// elements closes them, innermost first, before the marker.
func TestCutBodyClosesElements(t *testing.T) {
	body := "<div><table><tr><td><b>" + strings.Repeat("x", 100) + "</b></td></tr></table></div>"
	got, text, _ := render(body, 60, false)
	want := "<div><table><tr><td><b></b></td></tr></table></div>" + storage.CutMark
	if got != want {
		t.Errorf("render(%q, 60) = %q, want %q", body, got, want)
	}
	if text != "" {
		t.Errorf("render(%q, 60) text = %q, want nothing of the cut text", body, text)
	}
	got, _, _ = render("<p>short</p>", 40, false)
	if got != "<p>short</p>" {
		t.Errorf("render of a body under the cap = %q, want it unchanged", got)
	}
}

// TestPlainToHTMLCap checks that plainToHTML stops within its cap, never
// in the middle of an entity or a link, and says so.
func TestPlainToHTMLCap(t *testing.T) {
	for _, tc := range []struct {
		text string
		max  int
		want string
		cut  bool
	}{
		{"a & b", 100, "a &amp; b", false},
		{"a & b", 4, "a ", true},
		{"a & b", 7, "a &amp;", true},
		{"one\ntwo", 100, "one<br>two", false},
		{"one\ntwo", 6, "one", true},
		{"see https://e.x/a now", 20, "see ", true},
		{"héllo", 2, "h", true},
	} {
		got, cut := plainToHTML(tc.text, tc.max)
		if got != tc.want || cut != tc.cut {
			t.Errorf("plainToHTML(%q, %d) = %q, %v; want %q, %v", tc.text, tc.max, got, cut, tc.want, tc.cut)
		}
	}
}

// FuzzPlainToHTML checks the growth bound of the text-to-HTML step: never
// more than its cap, always valid UTF-8 when the text is, and, under the
// cap, the whole text (every rune of it is in the output, escaped or not).
func FuzzPlainToHTML(f *testing.F) {
	f.Add("a & b <c> https://e.x/(a)) \"q\"", 40)
	f.Add(strings.Repeat("&", 100), 17)
	f.Add("https://e.x/"+strings.Repeat(")", 50), 1000)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit = max(0, limit%4096)
		got, cut := plainToHTML(text, limit)
		if len(got) > limit {
			t.Fatalf("plainToHTML(%q, %d) = %d bytes, more than the cap", text, limit, len(got))
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("plainToHTML(%q, %d) = %q, not valid UTF-8", text, limit, got)
		}
		if !cut {
			all, _ := plainToHTML(text, 1<<30)
			if got != all {
				t.Fatalf("plainToHTML(%q, %d) = %q, not cut but not all of %q", text, limit, got, all)
			}
		}
	})
}
