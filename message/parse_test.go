package message

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"burner/internal/benchdata"
	"burner/storage"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenEnvelope is the MAIL FROM the golden tests deliver with.
const goldenEnvelope = "envelope@example.net"

// golden is what a golden file holds: the parsed fields a reader sees.
type golden struct {
	From     string  `json:"from"`
	FromName string  `json:"fromName"`
	Subject  *string `json:"subject"`
	Body     *string `json:"body"`
	Text     string  `json:"text"`
}

func mustRead(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func marshalGolden(tb testing.TB, g golden) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Bodies are HTML: keep <, > and & readable in the golden files.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.eml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.eml files")
	}
	p := New(0)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".eml")
		t.Run(name, func(t *testing.T) {
			raw := mustRead(t, file)
			m, err := p.Parse(raw, goldenEnvelope)
			if err != nil {
				t.Fatalf("parse(%s) returned error %v", file, err)
			}
			if len(m.Raw) != len(raw) || (len(raw) > 0 && &m.Raw[0] != &raw[0]) {
				t.Errorf("parse(%s).Raw is not the raw slice", file)
			}
			got := marshalGolden(t, golden{m.From, m.FromName, m.Subject, m.Body, m.Text})
			goldenFile := strings.TrimSuffix(file, ".eml") + ".golden.json"
			if *update {
				if err := os.WriteFile(goldenFile, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want := mustRead(t, goldenFile)
			if !bytes.Equal(got, want) {
				t.Errorf("parse(%s) =\n%s\nwant (%s)\n%s", file, got, goldenFile, want)
			}
		})
	}
}

func TestParseSanitizes(t *testing.T) {
	tests := []struct {
		name string
		html string
	}{
		{"script", `<p>hi</p><script>alert(1)</script>`},
		{"script uppercase", `<SCRIPT SRC="https://evil.example/x.js"></SCRIPT>`},
		{"script in svg", `<svg><script>alert(1)</script></svg>`},
		{"onerror", `<img src="https://example.com/x.png" onerror="alert(1)">`},
		{"onerror unquoted", `<img src=x onerror=alert(1)//>`},
		{"onload on body", `<body onload="alert(1)">x</body>`},
		{"javascript href", `<a href="javascript:alert(1)">x</a>`},
		{"javascript entity", `<a href="java&#x09;script&#58;alert(1)">x</a>`},
		{"javascript img", `<img src="javascript:alert(1)">`},
		{"vbscript", `<a href="vbscript:msgbox(1)">x</a>`},
		{"data url", `<a href="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;">x</a>`},
		{"iframe", `<iframe src="https://evil.example/"></iframe>`},
		{"form", `<form action="https://evil.example/"><input name="pw"></form>`},
		{"object embed", `<object data="x.swf"></object><embed src="x.swf">`},
		{"meta refresh", `<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`},
		{"style element", `<style>*{background:url("javascript:alert(1)")}</style>`},
		{"style url", `<div style="background: url(javascript:alert(1)); color: red">x</div>`},
		{"style expression", `<div style="width: expression(alert(1)); font-family: url(https://evil.example/f)">x</div>`},
		{"style binding", `<div style="-moz-binding: url(https://evil.example/x.xml#xss); behavior: url(x.htc)">x</div>`},
		{"unclosed tag", `<img src="x" onerror="alert(1)"`},
		{"comment breakout", `<!--><script>alert(1)</script>-->`},
		{"nested script", `<scr<script>ipt>alert(1)</scr</script>ipt>`},
	}
	p := New(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := "From: a@example.com\r\nContent-Type: text/html\r\n\r\n" + tt.html
			m, err := p.Parse([]byte(raw), "")
			if err != nil {
				t.Fatalf("parse(%q) returned error %v", raw, err)
			}
			if m.Body == nil {
				return // dropping everything is safe too
			}
			lower := strings.ToLower(*m.Body)
			for _, bad := range []string{"<script", "onerror", "onload", "javascript:", "vbscript:", "data:", "<iframe", "<form", "<input", "<object", "<embed", "<meta", "<style", "expression(", "url("} {
				if strings.Contains(lower, bad) {
					t.Errorf("parse(%q).Body = %q, contains %q", raw, *m.Body, bad)
				}
			}
		})
	}
}

func TestParsePlainText(t *testing.T) {
	tests := []struct {
		text string
		want string
	}{
		{"hello", "hello"},
		{"a\r\nb\nc\r\n\r\n", "a<br>b<br>c"},
		{"1 < 2 & \"x\"", "1 &lt; 2 &amp; &#34;x&#34;"},
		{"go to https://example.com.", `go to <a href="https://example.com" rel="nofollow noopener" target="_blank">https://example.com</a>.`},
		{"(http://example.com/a?b=1&c=2)", `(<a href="http://example.com/a?b=1&amp;c=2" rel="nofollow noopener" target="_blank">http://example.com/a?b=1&amp;c=2</a>)`},
		{"https://en.wikipedia.org/wiki/A_(b), ok", `<a href="https://en.wikipedia.org/wiki/A_(b)" rel="nofollow noopener" target="_blank">https://en.wikipedia.org/wiki/A_(b)</a>, ok`},
		{"<https://example.com/x>", `&lt;<a href="https://example.com/x" rel="nofollow noopener" target="_blank">https://example.com/x</a>&gt;`},
		{"javascript:alert(1) https://", "javascript:alert(1) https://"},
		{"www.example.com ftp://example.com", "www.example.com ftp://example.com"},
	}
	p := New(0)
	for _, tt := range tests {
		raw := "From: a@example.com\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + tt.text
		m, err := p.Parse([]byte(raw), "")
		if err != nil {
			t.Fatalf("parse(%q) returned error %v", raw, err)
		}
		if m.Body == nil || *m.Body != tt.want {
			t.Errorf("parse(%q).Body = %s, want %q", raw, show(m.Body), tt.want)
		}
	}
}

func show(s *string) string {
	if s == nil {
		return "nil"
	}
	return strings.ReplaceAll(*s, "\n", `\n`)
}

func TestParseText(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    []string // each must occur in Text
		notWant []string // none may occur in Text
	}{{
		name:    "blocks separate, inline joins",
		raw:     "Content-Type: text/html\r\n\r\n<div>one</div><div>two</div><p>thr<b>ee</b> <span>four</span></p><ul><li>five</li><li>six</li></ul><table><tr><td>seven</td><td>eight</td></tr></table>nine<br>ten",
		want:    []string{"one\ntwo\nthree four\nfive\nsix\nseven\neight\nnine\nten"},
		notWant: []string{"onetwo", "<", "div", "span", "td"},
	}, {
		name:    "entities decoded, whitespace collapsed",
		raw:     "Content-Type: text/html\r\n\r\n<p>Fish &amp; chips\r\n   &lt;cheap&gt;&nbsp;today</p>",
		want:    []string{"Fish & chips <cheap> today"},
		notWant: []string{"&amp;", "&lt;"},
	}, {
		name:    "link targets after text",
		raw:     "Content-Type: text/html\r\n\r\n<p>Click <a href=\"https://example.com/confirm?t=abc\">here</a> or <a href=\"mailto:help@example.com\">mail</a> <a href=\"https://example.com/confirm?t=abc\">again</a></p>",
		want:    []string{"Click here or mail again\nhttps://example.com/confirm?t=abc\nmailto:help@example.com"},
		notWant: []string{"href", "nofollow"},
	}, {
		name:    "plain part appended to html text",
		raw:     "Content-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nplain words\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>html words</p>\r\n--b--\r\n",
		want:    []string{"html words\nplain words"},
		notWant: []string{"<p>"},
	}, {
		name:    "hidden text skipped",
		raw:     "Content-Type: text/html\r\n\r\n<html><head><title>secret title</title><style>.x{}</style></head><body>shown<script>hidden()</script></body></html>",
		want:    []string{"shown"},
		notWant: []string{"secret", ".x", "hidden"},
	}, {
		name:    "plain text not doubled",
		raw:     "Content-Type: text/plain\r\n\r\nsee https://example.com now\r\n",
		want:    []string{"see https://example.com now\nhttps://example.com"},
		notWant: []string{"now\nsee"},
	}}
	p := New(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := p.Parse([]byte(tt.raw), "")
			if err != nil {
				t.Fatalf("parse(%q) returned error %v", tt.raw, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(m.Text, w) {
					t.Errorf("parse(%q).Text = %q, want it to contain %q", tt.raw, m.Text, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(m.Text, w) {
					t.Errorf("parse(%q).Text = %q, want it without %q", tt.raw, m.Text, w)
				}
			}
		})
	}
}

func TestParseContentType(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		want        string
	}{
		{"html", "text/html; charset=utf-8", "<p>hi</p>", "<p>hi</p>"},
		{"upper case", "TEXT/HTML; CHARSET=UTF-8", "<p>hi</p>", "<p>hi</p>"},
		{"broken parameters keep the type", "text/html; charset=utf-8; charset=latin1", "<p>hi</p>", "<p>hi</p>"},
		{"absent is plain", "", "<p>hi</p>", "&lt;p&gt;hi&lt;/p&gt;"},
		{"garbage is plain", "garbage", "<p>hi</p>", "&lt;p&gt;hi&lt;/p&gt;"},
		{"latin1 label reads C1 as Windows-1252", "text/plain; charset=iso-8859-1", "=80 =93x=94", "€ “x”"},
	}
	p := New(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := "Content-Transfer-Encoding: quoted-printable\r\n"
			if tt.contentType != "" {
				raw += "Content-Type: " + tt.contentType + "\r\n"
			}
			raw += "\r\n" + tt.body
			m, err := p.Parse([]byte(raw), "")
			if err != nil {
				t.Fatalf("parse(%q) returned error %v", raw, err)
			}
			if m.Body == nil || *m.Body != tt.want {
				t.Errorf("parse(%q).Body = %s, want %q", raw, show(m.Body), tt.want)
			}
		})
	}
}

func TestParseFrom(t *testing.T) {
	tests := []struct {
		name         string
		header       string
		envelope     string
		wantFrom     string
		wantFromName string
	}{
		{"header wins", "From: Ann <ann@example.com>\r\n", "bounce@example.net", "ann@example.com", "Ann"},
		{"first of several", "From: ann@example.com, Bob <bob@example.com>\r\n", "", "ann@example.com", ""},
		{"encoded name", "From: =?utf-8?q?Ren=C3=A9e?= <renee@example.com>\r\n", "", "renee@example.com", "Renée"},
		{"quoted name", "From: \"Doe, Jane\" <jane@example.com>\r\n", "", "jane@example.com", "Doe, Jane"},
		{"encoded word in quotes", "From: \"Shop =?utf-8?q?M=C3=BCller?=\" <shop@example.com>\r\n", "", "shop@example.com", "Shop Müller"},
		{"latin1 word in quotes", "From: \"=?iso-8859-1?q?J=FCrgen?=\" <j@example.com>\r\n", "", "j@example.com", "Jürgen"},
		{"no From", "", "bounce@example.net", "bounce@example.net", ""},
		{"empty From", "From:\r\n", "bounce@example.net", "bounce@example.net", ""},
		{"unparseable From", "From: Ann <ann@\r\n", "bounce@example.net", "bounce@example.net", ""},
		{"group only", "From: undisclosed-recipients:;\r\n", "bounce@example.net", "bounce@example.net", ""},
		{"null sender", "", "", "", ""},
		{"null sender, bad From", "From: <<>>\r\n", "", "", ""},
	}
	p := New(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.header + "Subject: s\r\n\r\nbody\r\n"
			m, err := p.Parse([]byte(raw), tt.envelope)
			if err != nil {
				t.Fatalf("parse(%q, %q) returned error %v", raw, tt.envelope, err)
			}
			if m.From != tt.wantFrom || m.FromName != tt.wantFromName {
				t.Errorf("parse(%q, %q) From, FromName = %q, %q, want %q, %q", raw, tt.envelope, m.From, m.FromName, tt.wantFrom, tt.wantFromName)
			}
		})
	}
}

func TestParseNoBody(t *testing.T) {
	tests := []struct {
		name string
		raw  string
	}{
		{"empty input", ""},
		{"header only", "From: a@example.com\r\nSubject: hi\r\n"},
		{"blank body", "From: a@example.com\r\n\r\n \r\n\r\n"},
		{"image only", "Content-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n"},
		{"empty multipart", "Content-Type: multipart/mixed; boundary=x\r\n\r\n--x--\r\n"},
		{"text attachment", "Content-Type: text/plain\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\nfile\r\n"},
	}
	p := New(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := p.Parse([]byte(tt.raw), "x@example.com")
			if err != nil {
				t.Fatalf("parse(%q) returned error %v", tt.raw, err)
			}
			if m.Body != nil || m.Text != "" {
				t.Errorf("parse(%q) Body, Text = %s, %q, want nil, \"\"", tt.raw, show(m.Body), m.Text)
			}
		})
	}
}

func TestParseDeepNesting(t *testing.T) {
	// Past maxDepth the parser gives up on the body, not on the message.
	var raw strings.Builder
	raw.WriteString("From: deep@example.com\r\nSubject: deep\r\n")
	for i := range 10000 {
		fmt.Fprintf(&raw, "Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n", i, i)
	}
	raw.WriteString("Content-Type: text/plain\r\n\r\ntoo deep\r\n")
	m, err := New(0).Parse([]byte(raw.String()), "")
	if err != nil {
		t.Fatalf("parse(deeply nested) returned error %v", err)
	}
	if m.From != "deep@example.com" || m.Body != nil {
		t.Errorf("parse(deeply nested) From, Body = %q, %s, want %q, nil", m.From, show(m.Body), "deep@example.com")
	}
}

func TestParseUnreadableHeader(t *testing.T) {
	// go-message refuses a header over 1 MiB; the message still carries
	// the envelope sender and the raw bytes.
	raw := []byte("X-Junk: " + strings.Repeat("a", 2<<20) + "\r\nFrom: a@example.com\r\n\r\nbody\r\n")
	m, err := New(0).Parse(raw, "bounce@example.net")
	if err == nil {
		t.Fatalf("parse(2 MiB header) returned no error, want one")
	}
	if m.From != "bounce@example.net" || !bytes.Equal(m.Raw, raw) || m.Body != nil {
		t.Errorf("parse(2 MiB header) From, Body = %q, %s, want %q, nil and Raw kept", m.From, show(m.Body), "bounce@example.net")
	}
}

var (
	eventHandler  = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	scriptURLAttr = regexp.MustCompile(`(?i)(href|src)\s*=\s*["']?\s*(javascript|vbscript|data):`)
)

func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.eml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		f.Add(mustRead(f, file), goldenEnvelope)
	}
	// Controls, raw and as references, in both kinds of body.
	f.Add([]byte("Content-Type: text/html\r\n\r\n<p>a\x00b&#1;c\x1b&#x0c;</p>\r\n"), goldenEnvelope)
	f.Add([]byte("Content-Type: text/plain\r\n\r\na\x00b\x01c\x0bd\r\n"), goldenEnvelope)
	p := New(0)
	f.Fuzz(func(t *testing.T, raw []byte, envelope string) {
		m, _ := p.Parse(raw, envelope)
		if m.Body != nil {
			lower := strings.ToLower(*m.Body)
			if strings.Contains(lower, "<script") {
				t.Fatalf("parse(%q).Body = %q, contains <script", raw, *m.Body)
			}
			if loc := eventHandler.FindStringIndex(*m.Body); loc != nil {
				t.Fatalf("parse(%q).Body = %q, has event handler %q", raw, *m.Body, (*m.Body)[loc[0]:loc[1]])
			}
			if loc := scriptURLAttr.FindStringIndex(*m.Body); loc != nil {
				t.Fatalf("parse(%q).Body = %q, has script URL %q", raw, *m.Body, (*m.Body)[loc[0]:loc[1]])
			}
			if !utf8.ValidString(*m.Body) {
				t.Fatalf("parse(%q).Body = %q, not valid UTF-8", raw, *m.Body)
			}
			// HTML cannot carry C0 controls but tab, LF and CR.
			if i := strings.IndexFunc(*m.Body, func(r rune) bool { return r < ' ' && r != '\t' && r != '\n' && r != '\r' }); i >= 0 {
				t.Fatalf("parse(%q).Body = %q, holds control %q", raw, *m.Body, (*m.Body)[i])
			}
		}
		if strings.ContainsRune(m.Plain, 0) || strings.ContainsRune(m.Text, 0) {
			t.Fatalf("parse(%q): Plain %q or Text %q holds a NUL", raw, m.Plain, m.Text)
		}
		if !utf8.ValidString(m.Text) {
			t.Fatalf("parse(%q).Text = %q, not valid UTF-8", raw, m.Text)
		}
		if m.Subject != nil && !utf8.ValidString(*m.Subject) {
			t.Fatalf("parse(%q).Subject = %q, not valid UTF-8", raw, *m.Subject)
		}
		if !bytes.Equal(m.Raw, raw) {
			t.Fatalf("parse(%q).Raw = %q, want the input", raw, m.Raw)
		}
	})
}

// BenchmarkParse parses and sanitizes a message: the small one of the
// golden files, and a realistic 4 KB newsletter of the load generator.
func BenchmarkParse(b *testing.B) {
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"golden", mustRead(b, "testdata/multipart-alternative.eml")},
		{"newsletter", benchdata.NewGen(1).Newsletter("bench0@inbox.test").Data()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := New(0)
			b.SetBytes(int64(len(tc.raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(tc.raw, goldenEnvelope); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParseNewsletter checks that the messages the storage and server
// benchmarks store are what the daemon would store: each field of
// benchdata's Message is what parse makes of its raw source.
func TestParseNewsletter(t *testing.T) {
	p := New(0)
	for _, nl := range benchdata.Batch(20, 3) {
		want := nl.Message()
		got, err := p.Parse(want.Raw, "loadgen@sender.test")
		if err != nil {
			t.Fatal(err)
		}
		if diff := messageDiff(got, want); diff != "" {
			t.Fatalf("parse of the newsletter to %s: %s", nl.To, diff)
		}
	}
}

// messageDiff names the first field in which got and want differ.
func messageDiff(got, want storage.Message) string {
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"From", got.From, want.From},
		{"FromName", got.FromName, want.FromName},
		{"Subject", *got.Subject, *want.Subject},
		{"Body", *got.Body, *want.Body},
		{"Text", got.Text, want.Text},
		{"Plain", got.Plain, want.Plain},
		{"Links", got.Links, want.Links},
		{"Headers", got.Headers, want.Headers},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			return fmt.Sprintf("%s = %q, want %q", f.name, f.got, f.want)
		}
	}
	return ""
}

func TestParseHeaders(t *testing.T) {
	raw := "From: a@example.com\r\nX-Test-Run: 42\r\nX-Label: =?utf-8?q?caf=C3=A9?=\r\nSubject: s\r\n\r\nbody\r\n"
	m, err := New(0).Parse([]byte(raw), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.Header{{Name: "From", Value: "a@example.com"}, {Name: "X-Test-Run", Value: "42"}, {Name: "X-Label", Value: "café"}, {Name: "Subject", Value: "s"}}
	if !slices.Equal(m.Headers, want) {
		t.Errorf("parse(%q).Headers = %v, want %v", raw, m.Headers, want)
	}
}

// TestTidyLines checks tidyLines against its definition: strings.Fields of
// each line, the lines with words joined by newlines.
func TestTidyLines(t *testing.T) {
	for _, s := range []string{
		"", "\n\n", "a", " a  b \n\n c\t\td \n", "x\u00a0y\u2003z\u0085w", "\xff \xfe\n\xc3", "  \n  lead\ntrail  ",
	} {
		var want []string
		for line := range strings.SplitSeq(s, "\n") {
			if words := strings.Fields(line); len(words) > 0 {
				want = append(want, strings.Join(words, " "))
			}
		}
		if got := tidyLines([]byte(s)); got != strings.Join(want, "\n") {
			t.Errorf("tidyLines(%q) = %q, want %q", s, got, strings.Join(want, "\n"))
		}
	}
}

// TestUTF16ByteOrder: text labelled UTF-16 is read in the order of its
// BOM, else little-endian, as browsers read the label (the real-world
// corpus's spamassassin/spam/utf16.eml came out as CJK noise).
func TestUTF16ByteOrder(t *testing.T) {
	p := New(0)
	for _, tc := range []struct{ name, word, body, want string }{
		{"no BOM", "RABlAHMAaQBnAG4A", "SABpAA==", "Design Hi"},
		{"little-endian BOM", "//5EAGUAcwBpAGcAbgA=", "//5IAGkA", "Design Hi"},
		{"big-endian BOM", "/v8ARABlAHMAaQBnAG4=", "/v8ASABp", "Design Hi"},
	} {
		raw := "From: a@b.test\r\nSubject: =?UTF-16?B?" + tc.word + "?=\r\nContent-Type: text/plain; charset=\"utf-16\"\r\n" +
			"Content-Transfer-Encoding: base64\r\n\r\n" + tc.body + "\r\n"
		m, _ := p.Parse([]byte(raw), goldenEnvelope)
		if got := deref(m.Subject) + " " + m.Plain; got != tc.want {
			t.Errorf("%s: parse(%q) subject and text = %q, want %q", tc.name, raw, got, tc.want)
		}
	}
}
