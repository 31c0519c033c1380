package smtpd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // registers ISO-8859-x, Windows-125x, … with go-message
	"github.com/emersion/go-message/textproto"
	"github.com/microcosm-cc/bluemonday"
	htmlcharset "golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/charmap"

	"burner/storage"
)

// maxDepth bounds how deeply parse follows nested multiparts. Every level
// costs a 4 KiB read buffer in go-message, so a 10 MB message of nothing but
// nested boundaries could otherwise ask for gigabytes; real mail nests about
// three deep (mixed > related > alternative).
const maxDepth = 16

// parser turns raw RFC 5322 messages into storage.Message values. It is
// built once (the bluemonday policy is expensive to build and safe to share)
// and used from many goroutines.
type parser struct {
	policy *bluemonday.Policy
	// maxBody caps what is kept of a body, of its text and of the plain
	// part, in bytes (Options.MaxBodyBytes): the work a message costs
	// grows with what is kept, and a body past it is cut (see render.go).
	maxBody int
}

// defaultMaxBody is Options.MaxBodyBytes when it is not set: 1 MiB is a
// hundred times a newsletter's body.
const defaultMaxBody = 1 << 20

func newParser() *parser {
	return &parser{policy: newPolicy(), maxBody: defaultMaxBody}
}

// newPolicy returns the policy every body goes through, whether it came as
// HTML or was made from plain text. It starts from UGCPolicy, which already
// drops script, style, forms, iframe, object, embed, meta, base, link, event
// handler attributes and every URL scheme but http, https and mailto, and
// adds what email HTML needs to look as its sender meant.
func newPolicy() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()

	// A message has no base URL: a relative link or image would resolve
	// against burner's own origin and reach its API with the reader's
	// credentials.
	p.AllowRelativeURLs(false)
	// "https:api/v1/inbox" has a scheme, so it is not relative to Go's
	// url.Parse, but browsers resolve an http(s) URL without "//" against
	// the base URL of the same scheme (WHATWG URL, "special relative or
	// authority state"): it is a relative URL all the same. Only URLs that
	// name a host leave burner.
	p.AllowURLSchemeWithCustomPolicy("http", hasHost)
	p.AllowURLSchemeWithCustomPolicy("https", hasHost)
	// cid: names an image inside the same message (RFC 2392); it loads
	// nothing from outside and runs nothing.
	p.AllowURLSchemes("cid")
	// Links leave burner in a new tab that cannot script the tab it came from.
	p.AddTargetBlankToFullyQualifiedLinks(true)

	// Email is laid out with inline styles, since clients strip <style>.
	// They pass here unchecked and render filters them (style.go), which
	// is much cheaper than bluemonday's AllowStyles; nothing may use this
	// policy without render.
	p.AllowAttrs("style").Globally()

	// The presentational attributes of table-based email layouts.
	color := regexp.MustCompile(`(?i)^(#[0-9a-f]{3,8}|[a-z]{3,20})$`)
	p.AllowAttrs("bgcolor").Matching(color).OnElements("table", "tr", "td", "th")
	p.AllowAttrs("border", "cellpadding", "cellspacing").Matching(bluemonday.Integer).OnElements("table")
	p.AllowAttrs("align").Matching(bluemonday.CellAlign).OnElements("table", "div", "p", "h1", "h2", "h3", "h4", "h5", "h6")
	p.AllowElements("center")
	p.AllowAttrs("color").Matching(color).OnElements("font")
	p.AllowAttrs("face").Matching(regexp.MustCompile(`^[\p{L}\p{N}\s,'"-]{1,100}$`)).OnElements("font")
	p.AllowAttrs("size").Matching(regexp.MustCompile(`^[+-]?[1-7]$`)).OnElements("font")
	return p
}

// hasHost reports whether u names a host, as an absolute http(s) URL does.
func hasHost(u *url.URL) bool { return u.Host != "" }

// parse parses raw (the message exactly as received, CRLF or LF line
// endings) with envelopeFrom being the SMTP MAIL FROM address ("" for the
// null sender). It never fails on malformed mail: it returns the best
// message it can, keeping From and Subject when only the MIME structure is
// broken. It returns an error only when not even the header could be read;
// the message is usable then too, with From set to envelopeFrom. Raw is raw
// itself, not a copy.
func (p *parser) parse(raw []byte, envelopeFrom string) (storage.Message, error) {
	m := storage.Message{From: envelopeFrom, Raw: raw}
	br := getReader(bytes.NewReader(raw))
	defer putReader(br)
	h, e, err := readEntity(br)
	if e.Entity == nil {
		return m, fmt.Errorf("read message header: %w", err)
	}

	m.From, m.FromName = sender(h.Get("From"), envelopeFrom)
	m.Subject = subject(h)
	m.Headers = headers(h)

	parts := textParts{maxBody: p.maxBody}
	parts.walk(e, err, 0)
	parts.adoptEmbedded()
	p.body(&m, &parts)
	return m, nil
}

// readers holds the bufio.Readers that readEntity reads through, one for
// a message and one for its header block: 4 KiB each, which was a fifth
// of what parsing a newsletter allocated. A pooled reader behaves as a new
// one after Reset, so the body is read in the same chunks as before.
var readers = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

// getReader returns a pooled bufio.Reader reading from r; putReader gives
// it back once nothing reads from it any more.
func getReader(r io.Reader) *bufio.Reader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readers.Put(br)
}

// blocks holds headerBlock's buffers: a header block is copied out of
// them by textproto.ReadHeader and cleanHeader, never kept.
var blocks = sync.Pool{New: func() any { return new([]byte) }}

// entity is a message or part with its Content-Type as contentType reads
// it, read once for newEntity and walk alike.
type entity struct {
	*message.Entity
	mediaType string
	params    map[string]string
}

// maxHeaderBytes bounds a header, as go-message's reader does: a header
// larger than 1 MiB is no mail.
const maxHeaderBytes = 1 << 20

// errHeaderTooBig is readEntity's error for a header over maxHeaderBytes.
var errHeaderTooBig = errors.New("header exceeds 1 MiB")

// readEntity reads a message (the whole message, or one embedded in a
// message/rfc822 part) from br and returns its header as written and the
// entity, whose body decodes its transfer encoding and charset as it is
// read (see newEntity) from br. Header lines go-message rejects are
// handled as cleanHeader says. The error is go-message's, and may report
// an unknown charset on a usable entity; the entity's Entity is nil only
// when the header could not be read at all.
func readEntity(br *bufio.Reader) (message.Header, entity, error) {
	buf := blocks.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledBuffer {
			blocks.Put(buf)
		}
	}()
	block, err := headerBlock(br, (*buf)[:0])
	*buf = block
	if err != nil {
		return message.Header{}, entity{}, err
	}
	var body io.Reader = br
	th, err := readHeader(block)
	if err != nil && err != io.EOF {
		var rest []byte
		block, rest = cleanHeader(block)
		if th, err = readHeader(block); err != nil && err != io.EOF {
			return message.Header{}, entity{}, err
		}
		if len(rest) > 0 {
			body = io.MultiReader(bytes.NewReader(rest), br)
		}
	}
	h := message.Header{Header: th}
	e, err := newEntity(h, body, "text/plain")
	return h, e, err
}

// readHeader reads the header block with go-message, which copies what it
// keeps: the reader goes back to the pool.
func readHeader(block []byte) (textproto.Header, error) {
	br := getReader(bytes.NewReader(block))
	defer putReader(br)
	return textproto.ReadHeader(br)
}

// headerBlock reads the header from br, appending it to block: the lines
// up to and including the first blank one, or all of them if none is
// blank.
func headerBlock(br *bufio.Reader, block []byte) ([]byte, error) {
	lineStart := true
	for {
		line, err := br.ReadSlice('\n')
		blank := lineStart && (string(line) == "\n" || string(line) == "\r\n")
		block = append(block, line...)
		if len(block) > maxHeaderBytes {
			return nil, errHeaderTooBig
		}
		switch {
		case err == bufio.ErrBufferFull:
			lineStart = false
			continue
		case err == io.EOF:
			return block, nil
		case err != nil:
			return nil, err
		case blank:
			return block, nil
		}
		lineStart = true
	}
}

// newEntity returns the entity of header h and body, which is not yet
// decoded. Its Content-Type is read by contentType, with defaultType for
// none, and when go-message would read it otherwise (an RFC 2231 parameter
// in a charset Go's mime package does not decode, a comment, a duplicate
// parameter) go-message is handed what contentType read, so that the two
// agree on the boundary and the charset. US-ASCII under any of its names
// reaches go-message as us-ascii, which it passes through for toUTF8.
//
// The entity carries the media type and parameters read here; a header
// handed to go-message rewritten reads back as the same type and the same
// boundary and charset (formatMediaType keeps both), so they are not read
// again.
func newEntity(h message.Header, body io.Reader, defaultType string) (entity, error) {
	v := h.Get("Content-Type")
	mediaType, params := contentType(v, defaultType)
	if v != "" || mediaType != "text/plain" {
		if t, p, err := mime.ParseMediaType(v); err != nil || t != mediaType || !maps.Equal(p, params) {
			if f := formatMediaType(mediaType, params); f != "" {
				h = h.Copy()
				h.Set("Content-Type", f)
			}
		}
	}
	if isUTF16(params["charset"]) {
		// go-message would read it big-endian: walk reads it instead
		// (decodeUTF16), from the bytes go-message leaves undecoded
		// without a charset.
		p := maps.Clone(params)
		delete(p, "charset")
		h = h.Copy()
		h.Set("Content-Type", formatMediaType(mediaType, p))
	}
	e, err := message.New(h, body)
	return entity{Entity: e, mediaType: mediaType, params: params}, err
}

// formatMediaType formats a Content-Type value, keeping only the
// parameters that matter to parsing when others cannot be written.
func formatMediaType(mediaType string, params map[string]string) string {
	if f := mime.FormatMediaType(mediaType, params); f != "" {
		return f
	}
	some := map[string]string{}
	for _, k := range []string{"boundary", "charset"} {
		if v, ok := params[k]; ok {
			some[k] = v
		}
	}
	return mime.FormatMediaType(mediaType, some)
}

// cleanHeader returns the header block with the lines that go-message
// would reject removed (lines without a colon, keys with bytes outside RFC
// 5322 §2.2 ftext, continuation lines that continue nothing), ended by a
// blank line, and the body text the block turned out to hold. A bad line
// ends the header, as in readers, when no field follows it before a blank
// line: the sender left out the blank line and the body begins there.
// Otherwise it is dropped, so that one junk line does not cost the From
// and Subject around it; an mbox "From " line first is always dropped.
func cleanHeader(block []byte) (header, body []byte) {
	var lines [][]byte
	for rest := block; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		lines = append(lines, line)
	}
	ended := len(lines) > 0 && len(bytes.TrimRight(lines[len(lines)-1], "\r\n")) == 0
	// fieldAfter[i]: a field line follows line i in a header that ends
	// with a blank line.
	fieldAfter := make([]bool, len(lines)+1)
	for i := len(lines) - 1; i >= 0; i-- {
		fieldAfter[i] = ended && (fieldAfter[i+1] || (i+1 < len(lines) && validFieldLine(bytes.TrimRight(lines[i+1], "\r\n"))))
	}
	out := make([]byte, 0, len(block)+2)
	kept := false // whether the last field line was kept, for its continuations
	for i, line := range lines {
		content := bytes.TrimRight(line, "\r\n")
		switch {
		case len(content) == 0: // the blank line that ends the header
			return append(out, line...), nil
		case content[0] == ' ' || content[0] == '\t':
			if kept {
				out = append(out, line...)
			}
		case validFieldLine(content):
			kept = true
			out = append(out, line...)
		case (i == 0 && bytes.HasPrefix(content, []byte("From "))) || fieldAfter[i]:
			kept = false
		default:
			return append(out, '\r', '\n'), bytes.Join(lines[i:], nil)
		}
	}
	return out, nil
}

// validFieldLine reports whether line starts with a field name and a colon.
// RFC 5322 §2.2: a field name is printable ASCII except the colon; spaces
// before the colon occur in the wild and go-message accepts them.
func validFieldLine(line []byte) bool {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return false
	}
	name := bytes.TrimRight(line[:i], " \t")
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c < 33 || c > 126 {
			return false
		}
	}
	return true
}

// maxHeaders bounds the header fields kept for the header filter; a
// message with more is hostile or broken, and its first fields are the ones
// a test sets.
const maxHeaders = 100

// headers returns the message's header fields with decoded values (RFC
// 2047), for the API's header filter.
func headers(h message.Header) []storage.Header {
	var out []storage.Header
	if n := min(h.Len(), maxHeaders); n > 0 {
		out = make([]storage.Header, 0, n)
	}
	for f := h.Fields(); f.Next() && len(out) < maxHeaders; {
		out = append(out, storage.Header{Name: f.Key(), Value: decodeHeader(f.Value())})
	}
	return out
}

// subject returns the decoded Subject header, or nil when there is none.
func subject(h message.Header) *string {
	if !h.Has("Subject") {
		return nil
	}
	s := decodeHeader(h.Get("Subject"))
	return &s
}

// textParts holds the first inline text/html and text/plain parts of a
// message, decoded to UTF-8.
type textParts struct {
	html, plain       *string
	htmlCut, plainCut bool       // the part was longer than readLimit, and cut
	maxBody           int        // the body cap: see readLimit
	parts             int        // parts visited so far, up to maxParts
	embedded          *textParts // the text of the first inline embedded message
}

// maxParts bounds the parts walk visits looking for the text. Real mail
// has a few dozen at most, its text among the first.
const maxParts = 1000

// walk visits e and, if it is a multipart, its parts in order, depth-first,
// and stops once it has both kinds of text. The text of the first message
// embedded inline (message/rfc822, as a digest's parts are) is kept apart,
// for adoptEmbedded. err is the error go-message returned with e, which
// tells whether its charset was decoded.
func (t *textParts) walk(e entity, err error, depth int) {
	mediaType, params := e.mediaType, e.params
	if strings.HasPrefix(mediaType, "multipart/") {
		if depth >= maxDepth {
			return
		}
		mr := textproto.NewMultipartReader(e.Body, params["boundary"])
		defaultType := "text/plain"
		if mediaType == "multipart/digest" {
			defaultType = "message/rfc822"
		}
		for t.html == nil || t.plain == nil {
			// Each part costs go-message buffers and a header map: a
			// message of 200,000 empty parts must not cost 200,000 of
			// them before its text is given up on.
			if t.parts >= maxParts {
				return
			}
			t.parts++
			p, err := mr.NextPart()
			if err != nil {
				// io.EOF, or a structure too broken to go on: keep what
				// the parts before gave.
				return
			}
			part, err := newEntity(message.Header{Header: p.Header}, p, defaultType)
			t.walk(part, err, depth+1)
		}
		return
	}

	if isAttachment(e.Header) {
		return
	}
	var (
		dst **string
		cut *bool
	)
	switch mediaType {
	case "text/html":
		dst, cut = &t.html, &t.htmlCut
	case "text/plain":
		dst, cut = &t.plain, &t.plainCut
	case "message/rfc822", "message/global":
		t.embed(e, depth)
		return
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
	limit := readLimit(mediaType, t.maxBody)
	buf := partBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			partBuffers.Put(buf)
		}
	}()
	data := readPart(buf, e, limit+1)
	if len(bytes.TrimSpace(data)) == 0 {
		// An empty alternative is no body: leave room for the other kind.
		return
	}
	if len(data) > limit {
		data, *cut = data[:limit], true
	}
	// IsUnknownCharset looks through err with errors.As, which costs
	// reflection: most parts have no error to look through.
	charset, unknown := params["charset"], err != nil && message.IsUnknownCharset(err)
	switch {
	case unknown && isUTF7(charset):
		// go-message knows no UTF-7; the data is only transfer-decoded.
		data, unknown = []byte(decodeUTF7(data)), false
	case isUTF16(charset):
		data = []byte(decodeUTF16(data)) // see newEntity
	}
	s := toUTF8(data, mediaType, charset, unknown)
	*dst = &s
}

// partBuffers hold the text parts walk reads: toUTF8 copies what it
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

// embed reads the message embedded in e, a message/rfc822 part, and keeps
// its text parts apart, if no text has been found yet and no other
// embedded message came first. Readers show an inline embedded message
// (a forwarded one, a digest's) in the body; burner has one body, so it
// shows the first embedded message's text when the message has no text of
// its own, and a message's own text always wins (see adoptEmbedded).
func (t *textParts) embed(e entity, depth int) {
	if t.embedded != nil || t.html != nil || t.plain != nil || depth >= maxDepth {
		return
	}
	br := getReader(e.Body)
	defer putReader(br)
	_, inner, err := readEntity(br)
	if inner.Entity == nil {
		return
	}
	t.embedded = &textParts{maxBody: t.maxBody, parts: t.parts}
	t.embedded.walk(inner, err, depth+1)
	t.embedded.adoptEmbedded()
	t.parts = t.embedded.parts
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

// isAttachment reports whether h has Content-Disposition: attachment. A
// text part with that disposition is a file the sender attached, not the
// message body.
func isAttachment(h message.Header) bool {
	disp, _, _ := strings.Cut(h.Get("Content-Disposition"), ";")
	return strings.EqualFold(strings.TrimSpace(disp), "attachment")
}

// contentType returns the lower-case media type of the Content-Type value
// v and its parameters (see parseMediaType). When only the parameters are
// broken (a duplicate charset, say), the type before them still counts.
// With no Content-Type a part is defaultType: text/plain (RFC 2045 §5.2),
// or message/rfc822 in a digest (RFC 2046 §5.1.5); one that does not parse
// is text/plain. Every name of US-ASCII is given as us-ascii.
func contentType(v, defaultType string) (string, map[string]string) {
	if strings.TrimSpace(v) == "" {
		return defaultType, nil
	}
	t, params, ok := parseMediaType(v)
	if !ok {
		return "text/plain", nil
	}
	if cs, ok := params["charset"]; ok && cs != "us-ascii" && isASCIICharset(cs) {
		params["charset"] = "us-ascii"
	}
	return t, params
}

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
