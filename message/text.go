package message

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/emersion/go-message"
	htmlcharset "golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/charmap"
)

// toUTF8 returns data, which go-message has already converted from a
// charset it knows, as valid UTF-8. Bytes that are not UTF-8 under no
// charset or us-ascii, which cannot hold them, are read as Windows-1252 as
// browsers do (for HTML after looking for a <meta charset>); under an
// unknown charset the invalid bytes become U+FFFD.
func toUTF8(data []byte, mediaType, charset string, unknownCharset bool) string {
	if utf8.Valid(data) {
		if _, name := htmlcharset.Lookup(charset); name == "windows-1252" {
			// WHATWG Encoding, "Names and labels": browsers read ISO-8859-1 as
			// Windows-1252, whose 0x80-0x9F are € “ ” … where ISO-8859-1
			// has C1 controls nobody means; senders rely on that.
			return strings.Map(c1ToWindows1252, string(data))
		}
		return string(data)
	}
	if !unknownCharset && (charset == "" || strings.EqualFold(charset, "us-ascii")) {
		enc := charmap.Windows1252.NewDecoder()
		if mediaType == "text/html" {
			e, _, _ := htmlcharset.DetermineEncoding(data, "text/html")
			enc = e.NewDecoder()
		}
		if decoded, err := enc.Bytes(data); err == nil {
			data = decoded
		}
	}
	return validUTF8(string(data))
}

func c1ToWindows1252(r rune) rune {
	if 0x80 <= r && r <= 0x9f {
		return charmap.Windows1252.DecodeByte(byte(r))
	}
	return r
}

func validUTF8(s string) string {
	return strings.ToValidUTF8(s, "\uFFFD")
}

// normalizeNewlines turns CRLF and lone CR line endings into LF. It does
// in one pass and one allocation what a strings.Replacer did in many.
func normalizeNewlines(s string) string {
	i := strings.IndexByte(s, '\r')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		b.WriteByte('\n')
		s = s[i+1:]
		if len(s) > 0 && s[0] == '\n' {
			s = s[1:]
		}
		i = strings.IndexByte(s, '\r')
	}
	b.WriteString(s)
	return b.String()
}

// joinText joins the non-empty of text, the links and plain with
// newlines, in one allocation; links are never empty.
func joinText(text string, links []string, plain string) string {
	switch {
	case len(links) == 0 && plain == "":
		return text
	case len(links) == 0 && text == "":
		return plain
	}
	n := len(text) + len(plain) + 2 + len(links)
	for _, l := range links {
		n += len(l)
	}
	var b strings.Builder
	b.Grow(n)
	add := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	add(text)
	for _, l := range links {
		add(l)
	}
	add(plain)
	return b.String()
}

// textParts holds the first inline text/html and text/plain parts of a
// message, decoded to UTF-8.
type textParts struct {
	html, plain       *string
	htmlCut, plainCut bool       // the part was longer than readLimit, and cut
	maxBody           int        // the body cap: see readLimit
	embedded          *textParts // the text of the first inline embedded message
}

// findText walks e for its text, and stops once it has both kinds. The
// text of the first message embedded inline (message/rfc822, as a
// digest's parts are) stands in when the message has none of its own
// (see adoptEmbedded). err is the error go-message returned with e.
func findText(e entity, err error, maxBody int) textParts {
	t := textParts{maxBody: maxBody}
	w := walker{text: &t}
	w.walk(e, err, 0)
	t.adoptEmbedded()
	return t
}

// visit reads the text of p, a part w found, and reports whether t still
// lacks a kind of text.
func (t *textParts) visit(w *walker, p part) bool {
	switch {
	case p.text:
		t.read(p)
	case p.embedded:
		t.embed(w, p)
	}
	return t.html == nil || t.plain == nil
}

// read keeps p, a text part, as the text of its kind unless one came
// before it.
func (t *textParts) read(p part) {
	var (
		dst **string
		cut *bool
	)
	switch p.mediaType {
	case "text/html":
		dst, cut = &t.html, &t.htmlCut
	case "text/plain":
		dst, cut = &t.plain, &t.plainCut
	default:
		return
	}
	if *dst != nil {
		return
	}
	// A truncated part or a bad base64 line still yields the bytes before
	// the fault, and some text beats none. No more is read than the body
	// cap can use (see readLimit): the rest of a 10 MB part is skipped,
	// not held.
	limit := readLimit(p.mediaType, t.maxBody)
	buf := partBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			partBuffers.Put(buf)
		}
	}()
	data := readPart(buf, p.entity, limit+1)
	if p.qp != nil {
		p.qp.release() // nothing reads the part again
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// An empty alternative is no body: leave room for the other kind.
		return
	}
	if len(data) > limit {
		data, *cut = data[:limit], true
	}
	// IsUnknownCharset looks through err with errors.As, which costs
	// reflection: most parts have no error to look through.
	charset, unknown := p.params["charset"], p.err != nil && message.IsUnknownCharset(p.err)
	switch {
	case unknown && isUTF7(charset):
		// go-message knows no UTF-7; the data is only transfer-decoded.
		data, unknown = []byte(decodeUTF7(data)), false
	case isUTF16(charset):
		data = []byte(decodeUTF16(data)) // see newEntity
	}
	s := toUTF8(data, p.mediaType, charset, unknown)
	*dst = &s
}

// partBuffers hold the text parts read reads: toUTF8 copies what it
// keeps, so a part's buffer serves the next one.
var partBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readPart reads up to limit bytes of e's body into buf, which must be
// empty, and returns them. A body that ends in an error yields the bytes
// before it. A base64 body is read by io.ReadAll, as it always was: how
// Go's base64 decoder treats padding in the middle of its input (a body
// encoded line by line) depends on the sizes it is asked to read, and the
// text kept must not change with the buffer it is read into.
func readPart(buf *bytes.Buffer, e entity, limit int) []byte {
	body := io.LimitReader(e.Body, int64(limit))
	if strings.EqualFold(e.Header.Get("Content-Transfer-Encoding"), "base64") {
		data, _ := io.ReadAll(body)
		return data
	}
	buf.ReadFrom(body)
	return buf.Bytes()
}

// embed reads the message embedded in p, an inline message/rfc822 part,
// and keeps its text parts apart, if no text has been found yet and no
// other embedded message came first. Readers show an inline embedded
// message (a forwarded one, a digest's) in the body; burner has one body,
// so it shows the first embedded message's text when the message has no
// text of its own, and a message's own text always wins (see
// adoptEmbedded). The embedded message's parts count against the same
// MaxParts.
func (t *textParts) embed(w *walker, p part) {
	if t.embedded != nil || t.html != nil || t.plain != nil || p.depth >= maxDepth {
		return
	}
	br := getReader(p.Body)
	defer putReader(br)
	_, inner, err := readEntity(br)
	if inner.Entity == nil {
		return
	}
	t.embedded = &textParts{maxBody: t.maxBody}
	iw := walker{text: t.embedded, parts: w.parts}
	iw.walk(inner, err, p.depth+1)
	t.embedded.adoptEmbedded()
	w.parts = iw.parts
}

// adoptEmbedded makes the text of the first embedded message the text of
// t when t has none of its own.
func (t *textParts) adoptEmbedded() {
	if t.embedded != nil && t.html == nil && t.plain == nil {
		t.html, t.htmlCut = t.embedded.html, t.embedded.htmlCut
		t.plain, t.plainCut = t.embedded.plain, t.embedded.plainCut
	}
	t.embedded = nil
}
