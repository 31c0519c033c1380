// Package hostile builds the pathological messages that the tests of
// message (what parsing keeps of them) and smtpd (what storing them costs)
// share.
package hostile

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
)

// The pathological messages of docs/hostile-mail.md, built to just under
// smtpd.DefaultMaxMessageBytes (10 MiB), so that each is a message a
// stranger can send. Most have short lines, as when SMTP capped message
// lines; long decoded lines come from quoted-printable soft line breaks,
// and, since spec §2 puts no limit on a message line, the raw-one-line
// shapes send 10 MB on one line as it stands.

// Size is the size each shape is built to: smtpd.DefaultMaxMessageBytes
// less room for the Received header the daemon adds. hostile cannot
// import smtpd, whose tests import it; smtpd's TestHostileSize holds the
// two in step.
const Size = 10<<20 - 4096

// Shape is one pathological message.
type Shape struct {
	Name string
	Make func() []byte
}

// Shapes are the pathological messages, one of each kind.
var Shapes = []Shape{
	// Escaping grows "&" five times on its way to HTML.
	{"plain-amp-lines", func() []byte {
		return plainMessage("text/plain", "7bit", repeatLines(strings.Repeat("&", 1990), Size))
	}},
	// Every URL becomes a link: the markup is seven times the text.
	{"plain-url-lines", func() []byte {
		return plainMessage("text/plain", "7bit", repeatLines(strings.TrimSpace(strings.Repeat("https://e.x/a ", 142)), Size))
	}},
	// One decoded line of 10 MB: a URL and closing brackets, which linkEnd
	// once counted for each bracket it trimmed.
	{"plain-url-brackets", func() []byte {
		return plainMessage("text/plain", "quoted-printable", softLines("https://e.x/("+strings.Repeat(")", Size), 70))
	}},
	{"plain-base64-amp", func() []byte {
		return plainMessage("text/plain", "base64", base64Lines(bytes.Repeat([]byte("&<>\"'"), Size/4*3/78*76/5)))
	}},
	{"html-amp", func() []byte {
		return plainMessage("text/html", "7bit", repeatLines(strings.Repeat("&", 1990), Size))
	}},
	{"html-deep", func() []byte {
		return plainMessage("text/html", "7bit", repeatLines(strings.Repeat("<div>", 398), Size))
	}},
	{"html-stray-end-tags", func() []byte {
		return plainMessage("text/html", "7bit", strings.Repeat("<b>\r\n", 1<<16)+repeatLines(strings.Repeat("</i>", 497), Size-5<<16))
	}},
	{"html-links", func() []byte {
		var b strings.Builder
		for i := 0; b.Len() < Size; i++ {
			fmt.Fprintf(&b, "<a href=\"https://e.x/%d\">%d</a>\r\n", i, i)
		}
		return plainMessage("text/html", "7bit", b.String())
	}},
	{"html-styles", func() []byte {
		return plainMessage("text/html", "7bit", repeatLines(strings.Repeat(`<p style="color:red;margin:0 1px;font-weight:bold">x</p>`, 34), Size))
	}},
	{"html-one-line", func() []byte {
		return plainMessage("text/html", "quoted-printable", softLines(strings.Repeat("<i>&amp;</i>", Size/12), 70))
	}},
	// One line of 10 MB as sent, no transfer encoding (spec §2: message
	// lines have no limit): it must cost no more than the shapes above.
	{"plain-raw-one-line", func() []byte {
		return plainMessage("text/plain", "8bit", strings.Repeat("https://e.x/a & <b> ", Size/20)+"\r\n")
	}},
	{"html-raw-one-line", func() []byte {
		return plainMessage("text/html", "8bit", strings.Repeat(`<p style="color:red"><a href="https://e.x/">&amp;</a></p>`, Size/57)+"\r\n")
	}},
	// Each part costs go-message a header map and buffers.
	{"many-parts", func() []byte {
		var b strings.Builder
		b.WriteString("From: a@b.test\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n")
		for b.Len() < Size-16 {
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
		b.WriteString(repeatLines(strings.Repeat("&", 1990), Size-b.Len()))
		return []byte(b.String())
	}},
	{"long-subject", func() []byte {
		var b strings.Builder
		b.WriteString("From: a@b.test\r\nSubject: x")
		for b.Len() < 1<<20-4096 {
			b.WriteString("\r\n =?utf-8?q?caf=C3=A9_&_caf=C3=A9_&_caf=C3=A9_&?=")
		}
		b.WriteString("\r\n\r\n")
		b.WriteString(repeatLines(strings.Repeat("&", 1990), Size-b.Len()))
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
		if b.Len() >= Size-512 {
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
