package message

// The text-to-HTML step and the last pass over a sanitized body: what a
// message's body, visible text and links become.

import (
	"errors"
	"fmt"
	"html"
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"burner/storage"
)

// urlPattern finds the links plainToHTML makes clickable; linkEnd trims
// what it took too much.
var urlPattern = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"]+`)

// plainToHTML escapes text into HTML, turning line breaks into <br> and
// http and https URLs into links. It stops before its output passes max
// bytes, and reports whether it did: escaping and links grow text up to
// seven times ("&" is "&amp;"), so the cap applies to what it writes.
func plainToHTML(text string, max int) (html string, cut bool) {
	text = strings.TrimRight(normalizeNewlines(text), "\n")
	var b strings.Builder
	b.Grow(min(len(text)+len(text)/8, max+64))
	for i := 0; len(text) > 0; i++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		if i > 0 {
			if b.Len()+len("<br>") > max {
				return b.String(), true
			}
			b.WriteString("<br>")
		}
		if !linkify(&b, line, max) {
			return b.String(), true
		}
	}
	return b.String(), false
}

// linkify writes line to b, escaped, with its URLs made links, and reports
// whether all of it fit within max bytes of b. A link that does not fit
// is left out whole.
func linkify(b *strings.Builder, line string, max int) bool {
	for {
		loc := urlPattern.FindStringIndex(line)
		if loc == nil {
			return writeEscaped(b, line, max)
		}
		start, end := loc[0], loc[0]+linkEnd(line[loc[0]:loc[1]])
		if !writeEscaped(b, line[:start], max) {
			return false
		}
		u := html.EscapeString(line[start:end])
		if strings.HasSuffix(u, "://") { // a scheme and nothing after it
			if b.Len()+len(u) > max {
				return false
			}
			b.WriteString(u)
		} else {
			const open, mid, close = `<a href="`, `" rel="nofollow noopener" target="_blank">`, `</a>`
			if b.Len()+len(open)+len(mid)+len(close)+2*len(u) > max {
				return false
			}
			b.WriteString(open)
			b.WriteString(u)
			b.WriteString(mid)
			b.WriteString(u)
			b.WriteString(close)
		}
		line = line[end:]
	}
}

// writeEscaped writes s to b escaped as html.EscapeString escapes it, and
// reports whether all of it fit within limit bytes of b; it never cuts an
// entity or a rune in two.
func writeEscaped(b *strings.Builder, s string, limit int) bool {
	for len(s) > 0 {
		i := strings.IndexAny(s, `<>&'"`)
		if i < 0 {
			i = len(s)
		}
		if room := max(limit-b.Len(), 0); i > room {
			for room > 0 && !utf8.RuneStart(s[room]) {
				room--
			}
			b.WriteString(s[:room])
			return false
		}
		b.WriteString(s[:i])
		if i == len(s) {
			return true
		}
		var esc string
		switch s[i] {
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '&':
			esc = "&amp;"
		case '\'':
			esc = "&#39;"
		case '"':
			esc = "&#34;"
		}
		if b.Len()+len(esc) > limit {
			return false
		}
		b.WriteString(esc)
		s = s[i+1:]
	}
	return true
}

// linkEnd returns the length of u without the punctuation that ends the
// sentence around it: "see https://example.com/a." links to /a. A closing
// bracket stays when it closes one opened inside the URL, as in
// https://en.wikipedia.org/wiki/Mail_(disambiguation). The brackets are
// counted once and the counts kept as the end moves, so that a URL of a
// million closing brackets costs a million steps, not their square.
func linkEnd(u string) int {
	var opened, closed [2]int // ( and [; ) and ]
	for i := 0; i < len(u); i++ {
		switch u[i] {
		case '(':
			opened[0]++
		case ')':
			closed[0]++
		case '[':
			opened[1]++
		case ']':
			closed[1]++
		}
	}
	for len(u) > 0 {
		switch c := u[len(u)-1]; c {
		case '.', ',', ';', ':', '!', '?', '\'', '*':
		case ')':
			if opened[0] >= closed[0] {
				return len(u)
			}
			closed[0]--
		case ']':
			if opened[1] >= closed[1] {
				return len(u)
			}
			closed[1]--
		default:
			return len(u)
		}
		u = u[:len(u)-1]
	}
	return 0
}

// blockElements are the elements that start a new line of text where a
// reader sees them, so words on either side do not run together.
var blockElements = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Br: true,
	atom.Caption: true, atom.Center: true, atom.Dd: true, atom.Details: true, atom.Div: true,
	atom.Dl: true, atom.Dt: true, atom.Figcaption: true, atom.Figure: true, atom.Footer: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Header: true, atom.Hgroup: true, atom.Hr: true, atom.Li: true, atom.Ol: true, atom.P: true,
	atom.Pre: true, atom.Section: true, atom.Summary: true, atom.Table: true, atom.Tbody: true,
	atom.Td: true, atom.Tfoot: true, atom.Th: true, atom.Thead: true, atom.Tr: true, atom.Ul: true,
}

// endTagLen is the length of the end tag of a.
func endTagLen(a atom.Atom) int { return len("</>") + len(a.String()) }

// voidElements have no end tag (HTML, "void elements"): a cut body has
// none of them to close.
var voidElements = map[atom.Atom]bool{
	atom.Area: true, atom.Base: true, atom.Br: true, atom.Col: true, atom.Embed: true,
	atom.Hr: true, atom.Img: true, atom.Input: true, atom.Link: true, atom.Meta: true,
	atom.Source: true, atom.Track: true, atom.Wbr: true,
}

// hiddenElements hold text no reader sees. The policy removes them all
// already; render skips them in case that ever changes.
var hiddenElements = map[atom.Atom]bool{atom.Script: true, atom.Style: true, atom.Title: true}

// render makes the last pass over body, bluemonday's output: it filters
// each style attribute with cleanStyle (the policy lets them through
// unchecked, see style.go) and collects the text a reader sees, one line
// per block with runs of white space made one space, and the distinct link
// targets of its <a> elements, in order. The body comes back unchanged,
// not copied, when it has no style to filter.
//
// A body longer than limit bytes is cut before the first token that ends
// past it, less the end tags of the elements open there, and so is the text
// and the links: the body kept, its end tags and the marker are at most
// limit+len(storage.CutMark) bytes. A body that was cut there,
// or before (cut: its part was longer than readLimit), has its open
// elements closed and ends with storage.CutMark.
func render(body string, limit int, cut bool) (clean, text string, links []string) {
	r := renderers.Get().(*renderer)
	defer r.release()
	if len(body) <= limit {
		// What bluemonday wrote is read as written; a body it did not
		// write (or a form bmTokens does not read) goes to the
		// tokenizer.
		r.bm = bmTokens{s: body, attrs: r.bm.attrs[:0], text: r.bm.text[:0]}
		if clean, text, links, ok := r.run(&r.bm, body, limit, cut); ok {
			return clean, text, links
		}
	}
	// The tokenizer holds a whole token: a text of 10 MB would be read
	// whole only to be cut. A token that ends past the cap is cut, so it
	// is given the cap and one byte more.
	clean, text, links, _ = r.run(newHTMLTokens(body[:min(len(body), limit+1)]), body, limit, cut)
	return clean, text, links
}

// renderer holds render's buffers between messages: the text and the
// rewritten body are as long as a body, and both are copied out before
// render returns.
type renderer struct {
	text, out []byte
	attrs     []xhtml.Attribute
	bm        bmTokens
}

var renderers = sync.Pool{New: func() any { return new(renderer) }}

// release puts r back in the pool, without what refers to the body, if
// its buffers are not too large to keep.
func (r *renderer) release() {
	if cap(r.text)+cap(r.out)+cap(r.bm.text) > maxPooledBuffer {
		return
	}
	clear(r.attrs[:cap(r.attrs)])
	clear(r.bm.attrs[:cap(r.bm.attrs)])
	r.bm.s, r.bm.name = "", ""
	renderers.Put(r)
}

// run is render reading body through z; it reports false when z gave up
// on the body (Bad).
func (r *renderer) run(z tokens, body string, limit int, cut bool) (clean, text string, links []string, ok bool) {
	b, out := r.text[:0], r.out[:0] // the text; the rewritten body
	defer func() { r.text, r.out = b, out }()
	var (
		seen      map[string]bool
		changed   bool // out holds the rewritten body
		copied    int  // body[:copied] is in out
		pos       int  // where the tokens read so far end in body
		hidden    int
		pre       int
		rewritten bool
		open      []atom.Atom // the elements open at pos, for a cut body
		closing   int         // the length of their end tags
		safe      mark        // the state after the last token that fit
	)
	for {
		// The body so far, its end tags and the marker must fit the cap;
		// the first token that takes them past it is taken back.
		kept := pos
		if changed {
			kept = len(out) + pos - copied
		}
		if kept+closing > limit {
			pos, copied, changed, closing, cut = safe.pos, safe.copied, safe.changed, safe.closing, true
			out, b, links, open = out[:safe.out], b[:safe.text], links[:safe.links], open[:safe.open]
			break
		}
		safe = mark{pos: pos, copied: copied, changed: changed, closing: closing, out: len(out), text: len(b), links: len(links), open: len(open)}

		tt := z.Next()
		start := pos
		pos += z.Len()
		if tt == xhtml.ErrorToken {
			if z.Bad() {
				return "", "", nil, false
			}
			// The end of what the tokenizer was given; what it held of
			// a token cut there is not part of the body.
			pos = start
			cut = cut || len(body) > limit
			break
		}
		switch tt {
		case xhtml.TextToken:
			if hidden > 0 {
				continue
			}
			t := z.Text()
			if pre > 0 {
				b = append(b, t...)
				continue
			}
			for _, c := range t {
				if c == '\n' {
					c = ' '
				}
				b = append(b, c)
			}
		case xhtml.StartTagToken, xhtml.EndTagToken, xhtml.SelfClosingTagToken:
			// bluemonday writes every attribute it keeps as key="value",
			// the key lower-cased by the tokenizer, so a style attribute,
			// however the sender spelled it, reads style= here.
			styled := tt != xhtml.EndTagToken && strings.Contains(body[start:pos], "style=")
			name := z.Name()
			a := atom.Lookup([]byte(name))
			if blockElements[a] {
				b = append(b, '\n')
			}
			switch {
			case a == 0 || voidElements[a]:
			case tt == xhtml.StartTagToken:
				open = append(open, a)
				closing += endTagLen(a)
			case tt == xhtml.EndTagToken:
				// The innermost element is the one an end tag closes;
				// looking further back is bounded, so that a million
				// stray end tags cost a million steps.
				for i := len(open) - 1; i >= max(0, len(open)-64); i-- {
					if open[i] == a {
						for _, o := range open[i:] {
							closing -= endTagLen(o)
						}
						open = open[:i]
						break
					}
				}
			}
			switch {
			case hiddenElements[a] && tt == xhtml.StartTagToken:
				hidden++
			case hiddenElements[a] && tt == xhtml.EndTagToken && hidden > 0:
				hidden--
			case a == atom.Pre && tt == xhtml.StartTagToken:
				pre++
			case a == atom.Pre && tt == xhtml.EndTagToken && pre > 0:
				pre--
			}
			if tt == xhtml.EndTagToken || (a != atom.A && !styled) {
				continue
			}
			rewritten = false
			r.attrs = z.Attrs(r.attrs[:0])
			for i := range r.attrs {
				attr := &r.attrs[i]
				switch {
				case attr.Key == "style":
					if clean := cleanStyle(attr.Val); clean != attr.Val {
						attr.Val, rewritten = clean, true
					}
				case a == atom.A && attr.Key == "href" && attr.Val != "" && !seen[attr.Val]:
					if seen == nil {
						seen = map[string]bool{}
					}
					seen[attr.Val] = true
					links = append(links, attr.Val)
				}
			}
			if rewritten {
				changed = true
				out = append(append(out, body[copied:start]...), '<')
				out = append(out, name...)
				for _, a := range r.attrs {
					if a.Key == "style" && a.Val == "" {
						continue
					}
					out = append(append(append(out, ' '), a.Key...), `="`...)
					out = append(append(out, html.EscapeString(a.Val)...), '"')
				}
				if tt == xhtml.SelfClosingTagToken {
					out = append(out, '/')
				}
				out = append(out, '>')
				copied = pos
			}
		}
	}
	if !changed && !cut {
		return body[:pos], tidyLines(b), links, true
	}
	out = append(out, body[copied:pos]...)
	if cut {
		for i := len(open) - 1; i >= 0; i-- {
			out = append(append(append(out, "</"...), open[i].String()...), '>')
		}
		out = append(out, storage.CutMark...)
	}
	return string(out), tidyLines(b), links, true
}

// mark is where render can cut a body: the state after a token.
type mark struct {
	pos, copied, closing   int
	changed                bool
	out, text, links, open int // lengths of render's slices
}

// tidyLines makes each line of s its words joined by single spaces, and
// drops the lines left empty: strings.Fields of each line, joined, in one
// pass. Words are what lies between white space runes (unicode.IsSpace);
// two words are joined by a newline when one came between them, else by a
// space.
func tidyLines(s []byte) string {
	// A Builder hands over what it holds without the copy that a slice
	// made into a string costs; the text is only ever shorter than s.
	// Each word is written whole, not a rune at a time.
	var out strings.Builder
	out.Grow(len(s))
	newline := false // a newline since the last word
	for i := 0; i < len(s); {
		if n := spaceLen(s[i:]); n > 0 {
			newline = newline || s[i] == '\n'
			i += n
			continue
		}
		j := i + 1
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if asciiSpace[c] {
					break
				}
			} else if spaceLen(s[j:]) > 0 {
				break
			}
			j++
		}
		switch {
		case newline && out.Len() > 0:
			out.WriteByte('\n')
		case out.Len() > 0:
			out.WriteByte(' ')
		}
		out.Write(s[i:j])
		newline = false
		i = j
	}
	return out.String()
}

// asciiSpace holds the ASCII white space of unicode.IsSpace.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// spaceLen returns the length of the white space rune (unicode.IsSpace)
// at the start of s, or 0 when s does not start with one. A byte that is
// not UTF-8 is no space.
func spaceLen(s []byte) int {
	if c := s[0]; c < utf8.RuneSelf {
		if asciiSpace[c] {
			return 1
		}
		return 0
	}
	r, n := utf8.DecodeRune(s)
	if unicode.IsSpace(r) {
		return n
	}
	return 0
}

// body fills in the body, text, plain text and links of m from the text
// parts walk found, within the body cap. No step grows what it is given by
// more than a small factor before the cap applies: the parts were read up
// to readLimit, plainToHTML stops at the cap, and render keeps at most the
// cap of what bluemonday made.
func (p *Parser) body(m *storage.Message, parts *textParts) {
	var plain string
	if parts.plain != nil {
		// The plain part is served as text/plain (/text), which may hold
		// a form feed or an escape as sent; a NUL ends the string for many
		// a reader and means nothing in mail, so it goes as it goes from
		// the body.
		plain = cutText(strings.TrimSpace(normalizeNewlines(strings.ReplaceAll(*parts.plain, "\x00", ""))), p.maxBody, parts.plainCut)
	}
	switch {
	case parts.html != nil:
		body, text, links := p.sanitize(*parts.html, parts.htmlCut)
		m.Body = &body
		m.Text = truncate(joinText(text, links, plain), p.maxBody)
		m.Links = links
		m.Plain = plain
		if parts.plain == nil {
			m.Plain = text
		}
	case parts.plain != nil:
		// The visible text is the plain part itself, so it is not added
		// a second time.
		html, cut := plainToHTML(*parts.plain, p.maxBody)
		body, text, links := render(dropControls(p.sanitizeWhole(html)), p.maxBody, cut || parts.plainCut)
		m.Body = &body
		m.Text = truncate(joinText(text, links, ""), p.maxBody)
		m.Links = links
		m.Plain = plain
	}
}

// sanitize returns the HTML part html made safe to show, with its visible
// text and links (see render); cut says the part was cut at readLimit.
// bluemonday may write five times what it reads ("&" is "&amp;"), so it
// writes into a buffer that takes the cap and one byte more and then
// stops it: render cuts what is past the cap anyway.
func (p *Parser) sanitize(html string, cut bool) (body, text string, links []string) {
	w := &capWriter{max: p.maxBody + 1}
	w.buf.Grow(min(len(html), w.max))
	// NUL has no place in HTML (browsers replace it); bluemonday would
	// keep it, escaped, in the body. The policy leaves a line break for
	// each element it removes; around the body they are only noise.
	html = strings.ReplaceAll(html, "\x00", "")
	if !fastSanitize(p.view, html, w) {
		w.buf.Reset()
		if err := p.policy.SanitizeReaderToWriter(strings.NewReader(html), w); err != nil && err != errCapped {
			panic(fmt.Sprintf("sanitize: %v", err)) // only the writer fails, and it fails only so
		}
	}
	// bluemonday turns a character reference such as "&#1;" into the
	// control itself, so the controls are dropped from what it wrote.
	return render(dropControls(strings.TrimSpace(w.buf.String())), p.maxBody, cut)
}

// sanitizeWhole returns html made safe to show, whole: what bluemonday's
// Sanitize returns, by the fast sanitizer where it can (fastsanitize.go).
// plainToHTML's output always can, unless the text holds what is no URL
// for url.Parse.
func (p *Parser) sanitizeWhole(html string) string {
	if strings.TrimSpace(html) == "" {
		return html // as Sanitize returns it
	}
	w := &capWriter{max: math.MaxInt}
	w.buf.Grow(len(html) + len(html)/8)
	if fastSanitize(p.view, html, w) {
		return w.buf.String()
	}
	return p.policy.Sanitize(html)
}

// dropControls returns s without the C0 control characters HTML cannot
// carry: all but tab, LF and CR (HTML, "Preprocessing the input stream":
// a control is a parse error; a NUL in text is ignored, as here). Form feed
// and vertical tab separate words, so they become spaces. Nothing grows,
// so the body cap holds, and s comes back as is when it has none.
func dropControls(s string) string {
	i := 0
	// Eight bytes at a time while none is below 0x20 (white space is,
	// and is looked at a byte at a time): a body has none to drop.
	for {
		for i+8 <= len(s) && !hasC0(s[i:i+8]) {
			i += 8
		}
		end := min(i+8, len(s))
		for i < end && !isDroppedControl(s[i]) {
			i++
		}
		if i < end || i == len(s) {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\v' || c == '\f':
			b.WriteByte(' ')
		case !isDroppedControl(c):
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hasC0 reports whether one of the eight bytes of b is below 0x20: the
// borrow of subtracting 0x20 from a byte sets its high bit only when it
// was below 0x20 (or at 0x80 and more, which &^w rules out), and a
// borrow into the next byte happens only after such a byte, so the test
// is exact.
func hasC0(b string) bool {
	w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	return (w-0x2020202020202020)&^w&0x8080808080808080 != 0
}

// isDroppedControl reports whether c is a C0 control other than tab, LF
// and CR. No byte of a multi-byte UTF-8 rune is one.
func isDroppedControl(c byte) bool {
	return c < ' ' && c != '\t' && c != '\n' && c != '\r'
}

// capWriter keeps the first max bytes written to it, then fails.
type capWriter struct {
	buf strings.Builder
	max int
}

// errCapped stops bluemonday once capWriter is full.
var errCapped = errors.New("body cap reached")

func (w *capWriter) Write(b []byte) (int, error) {
	if room := w.max - w.buf.Len(); len(b) > room {
		w.buf.Write(b[:room])
		return room, errCapped
	}
	return w.buf.Write(b)
}

func (w *capWriter) WriteString(s string) (int, error) {
	if room := w.max - w.buf.Len(); len(s) > room {
		w.buf.WriteString(s[:room])
		return room, errCapped
	}
	return w.buf.WriteString(s)
}

// readLimit is how much of a text part of mediaType is read, for a body
// cap of max bytes: plain text only grows on its way to HTML, so max of it
// is all the cap can keep; HTML shrinks as the sanitizer drops markup, and
// twice the cap leaves room for that (mail readers clip far sooner: Gmail
// at 102 KB) while bounding what the sanitizer, the costliest step, is
// given.
func readLimit(mediaType string, max int) int {
	if mediaType == "text/html" {
		return max + max/4
	}
	return max
}

// cutText returns s, cut to at most max bytes at a rune boundary; when it
// was cut there or before (cut), it ends with storage.CutText.
func cutText(s string, max int, cut bool) string {
	if len(s) > max {
		s, cut = truncate(s, max), true
	}
	if cut {
		return s + storage.CutText
	}
	return s
}

// truncate returns the longest prefix of s of at most max bytes that does
// not end inside a rune.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}
