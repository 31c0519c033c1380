package message

import (
	"slices"
	"strings"
	"testing"
)

// TestTextOrFile pins the one rule of the package doc: every part is the
// message's text or a file, never both, and delivery (Parse) and the
// attachment routes (Attachments) read it alike.
func TestTextOrFile(t *testing.T) {
	const head = "From: a@example.com\r\nSubject: rule\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
	for _, tc := range []struct {
		name  string
		parts string
		plain string   // Parse's Plain
		files []string // Attachments' names
	}{
		{"named text after the text is a file",
			"--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n" +
				"--b\r\nContent-Type: text/plain; name=x.txt\r\n\r\nfile text\r\n",
			"hello", []string{"x.txt"}},
		{"named text that comes first is the text",
			"--b\r\nContent-Type: text/plain; name=x.txt\r\n\r\nbody text\r\n" +
				"--b\r\nContent-Type: image/png; name=logo.png\r\n\r\npng\r\n",
			"body text", []string{"logo.png"}},
		{"named inline text after the text is a file",
			"--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n" +
				"--b\r\nContent-Type: text/plain\r\nContent-Disposition: inline; filename=notes.txt\r\n\r\nnotes\r\n",
			"hello", []string{"notes.txt"}},
		{"an attachment disposition is a file, even first",
			"--b\r\nContent-Type: text/plain; name=x.txt\r\nContent-Disposition: attachment\r\n\r\nfile text\r\n" +
				"--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n",
			"hello", []string{"x.txt"}},
		{"unnamed text after the text is neither",
			"--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n" +
				"--b\r\nContent-Type: text/plain\r\n\r\nfooter\r\n",
			"hello", nil},
		{"named text/html after an HTML part is a file",
			"--b\r\nContent-Type: text/html\r\n\r\n<p>hello</p>\r\n" +
				"--b\r\nContent-Type: text/html; name=page.html\r\n\r\n<p>page</p>\r\n",
			"hello", []string{"page.html"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(head + tc.parts + "--b--\r\n")
			m, err := New(0).Parse(raw, "")
			if err != nil || m.Plain != tc.plain {
				t.Errorf("Parse: Plain %q, %v; want %q", m.Plain, err, tc.plain)
			}
			var names []string
			for _, f := range Attachments(raw).Files {
				names = append(names, f.Filename)
			}
			if !slices.Equal(names, tc.files) {
				t.Errorf("Attachments: %q, want %q", names, tc.files)
			}
			if strings.Contains(m.Plain, "file text") || m.Body != nil && strings.Contains(*m.Body, "file text") {
				t.Errorf("Parse: a file is the text too: Plain %q", m.Plain)
			}
		})
	}
}
