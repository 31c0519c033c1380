package smtpd

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // registers ISO-8859-x, Windows-125x, … with go-message
	"github.com/emersion/go-message/mail"
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
}

func newParser() *parser {
	return &parser{policy: newPolicy()}
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

// sanitize returns the HTML part html made safe to show, with its visible
// text and links (see render).
func (p *parser) sanitize(html string) (body, text string, links []string) {
	// NUL has no place in HTML (browsers replace it); bluemonday would
	// keep it, escaped, in the body. The policy leaves a line break for
	// each element it removes; around the body they are only noise.
	return render(strings.TrimSpace(p.policy.Sanitize(strings.ReplaceAll(html, "\x00", ""))))
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
	e, err := readEntity(raw)
	if e == nil {
		return m, fmt.Errorf("read message header: %w", err)
	}

	h := mail.Header{Header: e.Header}
	m.From, m.FromName = sender(h, envelopeFrom)
	m.Subject = subject(h)
	m.Headers = headers(h)

	var parts textParts
	parts.walk(e, err, 0)

	var plain string
	if parts.plain != nil {
		plain = strings.TrimSpace(normalizeNewlines(*parts.plain))
	}
	switch {
	case parts.html != nil:
		body, text, links := p.sanitize(*parts.html)
		m.Body = &body
		m.Text = joinNonEmpty(joinNonEmpty(text, strings.Join(links, "\n")), plain)
		m.Links = links
		m.Plain = plain
		if parts.plain == nil {
			m.Plain = text
		}
	case parts.plain != nil:
		// The visible text is the plain part itself, so it is not added
		// a second time.
		body, text, links := render(p.policy.Sanitize(plainToHTML(*parts.plain)))
		m.Body = &body
		m.Text = joinNonEmpty(text, strings.Join(links, "\n"))
		m.Links = links
		m.Plain = plain
	}
	return m, nil
}

// readEntity reads the header of raw and returns the message entity, whose
// body decodes its transfer encoding and charset as it is read. A header
// line go-message rejects (an mbox "From " line, a line without a colon,
// a key with a space in it) is dropped and the header read again, so one
// bad line does not cost the From and Subject around it. The error is
// go-message's, and may report an unknown charset on a usable entity.
func readEntity(raw []byte) (*message.Entity, error) {
	e, err := message.Read(bytes.NewReader(raw))
	if e != nil {
		return e, err
	}
	e, err2 := message.Read(bytes.NewReader(cleanHeader(raw)))
	if e != nil {
		return e, err2
	}
	return nil, err
}

// cleanHeader returns raw with the header lines that go-message would
// reject removed: lines without a colon, keys with bytes outside RFC 5322
// §2.2 ftext, and continuation lines that continue nothing.
func cleanHeader(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	kept := false // whether the last field line was kept, for its continuations
	rest := raw
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		content := bytes.TrimRight(line, "\r\n")
		switch {
		case len(content) == 0: // the blank line that ends the header
			out = append(out, line...)
			return append(out, rest...)
		case content[0] == ' ' || content[0] == '\t':
			if kept {
				out = append(out, line...)
			}
		default:
			kept = validFieldLine(content)
			if kept {
				out = append(out, line...)
			}
		}
	}
	return out
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

// sender returns the address and display name of the first From address,
// or envelopeFrom and no name when there is no From header or it does not
// parse (SPEC §3).
func sender(h mail.Header, envelopeFrom string) (addr, name string) {
	list, err := h.AddressList("From")
	if err != nil || len(list) == 0 || list[0].Address == "" {
		return envelopeFrom, ""
	}
	name = list[0].Name
	if strings.Contains(name, "=?") {
		// RFC 2047 §5 forbids encoded words inside a quoted display name,
		// but senders write "Shop =?utf-8?q?M=C3=BCller?=" all the same,
		// and mail readers decode them; so does burner.
		dec := mime.WordDecoder{CharsetReader: message.CharsetReader}
		if decoded, err := dec.DecodeHeader(name); err == nil {
			name = decoded
		}
	}
	return validUTF8(list[0].Address), validUTF8(name)
}

// maxHeaders bounds the header fields kept for the header filter; a
// message with more is hostile or broken, and its first fields are the ones
// a test sets.
const maxHeaders = 100

// headers returns the message's header fields with decoded values (RFC
// 2047), for the API's header filter.
func headers(h mail.Header) []storage.Header {
	var out []storage.Header
	for f := h.Fields(); f.Next() && len(out) < maxHeaders; {
		v, err := f.Text()
		if err != nil {
			v = f.Value() // an unknown charset: the raw value is the best there is
		}
		out = append(out, storage.Header{Name: f.Key(), Value: validUTF8(v)})
	}
	return out
}

// subject returns the decoded Subject header, or nil when there is none.
func subject(h mail.Header) *string {
	if !h.Has("Subject") {
		return nil
	}
	// On an unknown charset or a broken encoded word, Subject returns the
	// raw header value with the error, and that is the best there is.
	s, _ := h.Subject()
	s = validUTF8(s)
	return &s
}

// textParts holds the first inline text/html and text/plain parts of a
// message, decoded to UTF-8.
type textParts struct {
	html, plain *string
}

// walk visits e and, if it is a multipart, its parts in order, depth-first,
// and stops once it has both kinds of text. err is the error go-message
// returned with e, which tells whether its charset was decoded.
func (t *textParts) walk(e *message.Entity, err error, depth int) {
	if mr := e.MultipartReader(); mr != nil {
		if depth >= maxDepth {
			return
		}
		for t.html == nil || t.plain == nil {
			part, err := mr.NextPart()
			if part == nil {
				// io.EOF, or a structure too broken to go on: keep what
				// the parts before gave.
				return
			}
			t.walk(part, err, depth+1)
		}
		return
	}

	if isAttachment(e.Header) {
		return
	}
	mediaType, params := contentType(e.Header)
	var dst **string
	switch mediaType {
	case "text/html":
		dst = &t.html
	case "text/plain":
		dst = &t.plain
	default:
		return
	}
	if *dst != nil {
		return
	}
	// A truncated part or a bad base64 line still yields the bytes before
	// the fault, and some text beats none.
	data, _ := io.ReadAll(e.Body)
	if len(bytes.TrimSpace(data)) == 0 {
		// An empty alternative is no body: leave room for the other kind.
		return
	}
	s := toUTF8(data, mediaType, params["charset"], message.IsUnknownCharset(err))
	*dst = &s
}

// isAttachment reports whether h has Content-Disposition: attachment. A
// text part with that disposition is a file the sender attached, not the
// message body.
func isAttachment(h message.Header) bool {
	disp, _, _ := strings.Cut(h.Get("Content-Disposition"), ";")
	return strings.EqualFold(strings.TrimSpace(disp), "attachment")
}

// contentType returns the lower-case media type of h and its parameters.
// When only the parameters are broken (a duplicate charset, say), the type
// before them still counts. RFC 2045 §5.2: with no Content-Type, or one
// that does not parse, a part is text/plain.
func contentType(h message.Header) (string, map[string]string) {
	v := h.Get("Content-Type")
	t, params, err := mime.ParseMediaType(v)
	if err != nil {
		t, _, _ = strings.Cut(v, ";")
		t, params = strings.ToLower(strings.TrimSpace(t)), nil
	}
	if typ, sub, ok := strings.Cut(t, "/"); !ok || typ == "" || sub == "" || strings.ContainsAny(sub, "/ \t") {
		return "text/plain", nil
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

// newlines is normalizeNewlines' Replacer, built once: a Replacer is safe
// for concurrent use.
var newlines = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// normalizeNewlines turns CRLF and lone CR line endings into LF.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return newlines.Replace(s)
}

// joinNonEmpty joins the non-empty of a and b with a newline.
func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
