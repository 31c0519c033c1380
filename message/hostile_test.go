package smtpd

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/emersion/go-smtp"

	"burner/internal/benchdata"
	"burner/storage"
)

// The pathological messages of the hostile-mail issue, built to just under
// the default max_message_bytes (10 MiB) with lines SMTP lets through
// (max_line_length 2000), so that each is a message a stranger can send.
// Long decoded lines come from quoted-printable soft line breaks.

// hostileSize is the size each shape is built to: under 10 MiB with room
// for the Received header the daemon adds.
const hostileSize = 10<<20 - 4096

// hostileShape is one pathological message.
type hostileShape struct {
	name string
	make func() []byte
}

var hostileShapes = []hostileShape{
	// Escaping grows "&" five times on its way to HTML.
	{"plain-amp-lines", func() []byte {
		return plainMessage("text/plain", "7bit", repeatLines(strings.Repeat("&", 1990), hostileSize))
	}},
	// Every URL becomes a link: the markup is seven times the text.
	{"plain-url-lines", func() []byte {
		return plainMessage("text/plain", "7bit", repeatLines(strings.TrimSpace(strings.Repeat("https://e.x/a ", 142)), hostileSize))
	}},
	// One decoded line of 10 MB: a URL and closing brackets, which linkEnd
	// once counted for each bracket it trimmed.
	{"plain-url-brackets", func() []byte {
		return plainMessage("text/plain", "quoted-printable", softLines("https://e.x/("+strings.Repeat(")", hostileSize), 70))
	}},
	{"plain-base64-amp", func() []byte {
		return plainMessage("text/plain", "base64", base64Lines(bytes.Repeat([]byte("&<>\"'"), hostileSize/4*3/78*76/5)))
	}},
	{"html-amp", func() []byte {
		return plainMessage("text/html", "7bit", repeatLines(strings.Repeat("&", 1990), hostileSize))
	}},
	{"html-deep", func() []byte {
		return plainMessage("text/html", "7bit", repeatLines(strings.Repeat("<div>", 398), hostileSize))
	}},
	{"html-stray-end-tags", func() []byte {
		return plainMessage("text/html", "7bit", strings.Repeat("<b>\r\n", 1<<16)+repeatLines(strings.Repeat("</i>", 497), hostileSize-5<<16))
	}},
	{"html-links", func() []byte {
		var b strings.Builder
		for i := 0; b.Len() < hostileSize; i++ {
			fmt.Fprintf(&b, "<a href=\"https://e.x/%d\">%d</a>\r\n", i, i)
		}
		return plainMessage("text/html", "7bit", b.String())
	}},
	{"html-styles", func() []byte {
		return plainMessage("text/html", "7bit", repeatLines(strings.Repeat(`<p style="color:red;margin:0 1px;font-weight:bold">x</p>`, 34), hostileSize))
	}},
	{"html-one-line", func() []byte {
		return plainMessage("text/html", "quoted-printable", softLines(strings.Repeat("<i>&amp;</i>", hostileSize/12), 70))
	}},
	// Each part costs go-message a header map and buffers.
	{"many-parts", func() []byte {
		var b strings.Builder
		b.WriteString("From: a@b.test\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n")
		for b.Len() < hostileSize-16 {
			b.WriteString("--b\r\n\r\nx\r\n")
		}
		b.WriteString("--b--\r\n")
		return []byte(b.String())
	}},
	// go-message reads at most 1 MB of header; these fill it, and the
	// body after it.
	{"many-headers", func() []byte {
		var b strings.Builder
		b.WriteString("From: a@b.test\r\nSubject: headers\r\n")
		for i := 0; b.Len() < 1<<20-4096; i++ {
			fmt.Fprintf(&b, "X-H%d: =?utf-8?q?caf=C3=A9?=\r\n", i)
		}
		b.WriteString("\r\n")
		b.WriteString(repeatLines(strings.Repeat("&", 1990), hostileSize-b.Len()))
		return []byte(b.String())
	}},
	{"long-subject", func() []byte {
		var b strings.Builder
		b.WriteString("From: a@b.test\r\nSubject: x")
		for b.Len() < 1<<20-4096 {
			b.WriteString("\r\n =?utf-8?q?caf=C3=A9_&_caf=C3=A9_&_caf=C3=A9_&?=")
		}
		b.WriteString("\r\n\r\n")
		b.WriteString(repeatLines(strings.Repeat("&", 1990), hostileSize-b.Len()))
		return []byte(b.String())
	}},
}

// plainMessage returns a single-part message of the media type, its body
// in the transfer encoding given.
func plainMessage(mediaType, encoding, body string) []byte {
	return []byte("From: Attacker <a@b.test>\r\nTo: t@inbox.test\r\nSubject: hostile\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: " + mediaType + "; charset=utf-8\r\nContent-Transfer-Encoding: " + encoding + "\r\n\r\n" + body)
}

// repeatLines repeats line, CRLF-ended, up to size bytes.
func repeatLines(line string, size int) string {
	return strings.Repeat(line+"\r\n", size/(len(line)+2))
}

// softLines writes s as quoted-printable lines of n characters joined by
// soft line breaks: one decoded line. s must need no escaping but "=".
func softLines(s string, n int) string {
	var b strings.Builder
	for len(s) > 0 {
		k := min(n, len(s))
		b.WriteString(s[:k])
		s = s[k:]
		if len(s) > 0 {
			b.WriteString("=\r\n")
		}
		if b.Len() >= hostileSize-512 {
			break
		}
	}
	return b.String()
}

// base64Lines encodes data in base64 lines of 76 characters.
func base64Lines(data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(enc) > 0 {
		k := min(76, len(enc))
		b.WriteString(enc[:k] + "\r\n")
		enc = enc[k:]
	}
	return b.String()
}

// TestHostileMessagesBounded checks what each pathological shape keeps:
// body, text and plain text within the cap (a cut body closes what it
// opened and ends with the marker), links no more than the body holds.
func TestHostileMessagesBounded(t *testing.T) {
	p := newParser()
	p.maxBody = 64 << 10 // smaller than the default, so that every shape is cut
	for _, shape := range hostileShapes {
		t.Run(shape.name, func(t *testing.T) {
			raw := shape.make()
			if len(raw) > 10<<20 {
				t.Fatalf("the shape is %d bytes, more than max_message_bytes", len(raw))
			}
			for i, line := range bytes.Split(raw, []byte("\r\n")) {
				if len(line) > 2000 {
					t.Fatalf("line %d is %d bytes: SMTP would refuse it", i, len(line))
				}
			}
			m, err := p.parse(raw, "env@b.test")
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if m.Body != nil {
				body := *m.Body
				// The end tags of what the cut left open are within the cap.
				if len(body) > p.maxBody+len(storage.CutMark) {
					t.Errorf("body is %d bytes, cap %d", len(body), p.maxBody)
				}
				if len(raw) > 4*p.maxBody && strings.HasPrefix(shape.name, "plain") && !strings.HasSuffix(body, storage.CutMark) {
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

// BenchmarkHostile stores each pathological shape through the real
// daemon over SMTP into a real data file, and reports the CPU it cost the
// process (cpu-ms/op, from getrusage: the daemon and the client, which
// only writes) and the peak of the process's resident memory during the
// run above what it held before (peak-MB, from VmHWM after resetting it).
// The "8-at-once" case sends the shape from 8 connections together.
func BenchmarkHostile(b *testing.B) {
	for _, shape := range hostileShapes {
		raw := shape.make()
		for _, conns := range []int{1, 8} {
			name := shape.name
			if conns > 1 {
				name += "/" + strconv.Itoa(conns) + "-at-once"
			}
			b.Run(name, func(b *testing.B) {
				db := openDB(b)
				addr := startDaemon(b, db, Options{})
				clients := make([]*smtpClient, conns)
				for i := range clients {
					clients[i] = &smtpClient{c: dial(b, addr)}
				}
				peak := benchdata.StartPeak(b)
				cpu := benchdata.CPUTime()
				b.ResetTimer()
				for b.Loop() {
					var wg sync.WaitGroup
					for _, c := range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							if err := c.send(raw); err != nil {
								b.Error(err)
							}
						}()
					}
					wg.Wait()
				}
				b.StopTimer()
				b.ReportMetric(float64(benchdata.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				b.ReportMetric(peak.MB(), "peak-MB")
				for _, c := range clients {
					c.c.Close()
				}
			})
		}
	}
}

// smtpClient sends one message at a time on one connection.
type smtpClient struct{ c *smtp.Client }

// send sends raw declaring its size, as MTAs do where SIZE is offered.
func (c *smtpClient) send(raw []byte) error {
	if err := c.c.Mail("a@b.test", &smtp.MailOptions{Size: int64(len(raw))}); err != nil {
		return err
	}
	if err := c.c.Rcpt("t@inbox.test", nil); err != nil {
		return err
	}
	w, err := c.c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	return w.Close()
}
