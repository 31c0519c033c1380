package smtpd

// The text-to-HTML step and the last pass over a sanitized body: what a
// message's body, visible text and links become.

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"
)

// urlPattern finds the links plainToHTML makes clickable; linkEnd trims
// what it took too much.
var urlPattern = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"]+`)

// plainToHTML escapes text into HTML, turning line breaks into <br> and
// http and https URLs into links.
func plainToHTML(text string) string {
	text = strings.TrimRight(normalizeNewlines(text), "\n")
	var b strings.Builder
	b.Grow(len(text) + len(text)/8)
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteString("<br>")
		}
		linkify(&b, line)
	}
	return b.String()
}

// linkify writes line to b, escaped, with its URLs made links.
func linkify(b *strings.Builder, line string) {
	for {
		loc := urlPattern.FindStringIndex(line)
		if loc == nil {
			b.WriteString(html.EscapeString(line))
			return
		}
		start, end := loc[0], loc[0]+linkEnd(line[loc[0]:loc[1]])
		b.WriteString(html.EscapeString(line[:start]))
		u := html.EscapeString(line[start:end])
		if strings.HasSuffix(u, "://") { // a scheme and nothing after it
			b.WriteString(u)
		} else {
			fmt.Fprintf(b, `<a href="%s" rel="nofollow noopener" target="_blank">%s</a>`, u, u)
		}
		line = line[end:]
	}
}

// linkEnd returns the length of u without the punctuation that ends the
// sentence around it: "see https://example.com/a." links to /a. A closing
// bracket stays when it closes one opened inside the URL, as in
// https://en.wikipedia.org/wiki/Mail_(disambiguation).
func linkEnd(u string) int {
	for len(u) > 0 {
		switch c := u[len(u)-1]; c {
		case '.', ',', ';', ':', '!', '?', '\'', '*':
		case ')':
			if strings.Count(u, "(") >= strings.Count(u, ")") {
				return len(u)
			}
		case ']':
			if strings.Count(u, "[") >= strings.Count(u, "]") {
				return len(u)
			}
		default:
			return len(u)
		}
		u = u[:len(u)-1]
	}
	return 0
}

// blockElements are the elements that start a new line of text where a
// reader sees them, so words on either side do not run together.
var blockElements = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true,
	"caption": true, "center": true, "dd": true, "details": true, "div": true,
	"dl": true, "dt": true, "figcaption": true, "figure": true, "footer": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"header": true, "hgroup": true, "hr": true, "li": true, "ol": true, "p": true,
	"pre": true, "section": true, "summary": true, "table": true, "tbody": true,
	"td": true, "tfoot": true, "th": true, "thead": true, "tr": true, "ul": true,
}

// hiddenElements hold text no reader sees. The policy removes them all
// already; render skips them in case that ever changes.
var hiddenElements = map[string]bool{"script": true, "style": true, "title": true}

// render makes the last pass over body, bluemonday's output: it filters
// each style attribute with cleanStyle (the policy lets them through
// unchecked, see style.go) and collects the text a reader sees, one line
// per block with runs of white space made one space, and the distinct link
// targets of its <a> elements, in order. The body comes back unchanged,
// not copied, when it has no style to filter.
func render(body string) (clean, text string, links []string) {
	bufs := renderBuffers.Get().(*[2][]byte)
	b, out := bufs[0][:0], bufs[1][:0] // the text; the rewritten body
	defer func() {
		if cap(b)+cap(out) <= maxPooledBuffer {
			bufs[0], bufs[1] = b, out
			renderBuffers.Put(bufs)
		}
	}()
	var (
		seen      map[string]bool
		changed   bool // out holds the rewritten body
		copied    int  // body[:copied] is in out
		pos       int  // where the tokens read so far end in body
		hidden    int
		pre       int
		attrs     []xhtml.Attribute
		rewritten bool
	)
	z := xhtml.NewTokenizer(strings.NewReader(body))
	for {
		tt := z.Next()
		// Tokens tile the input, so their raw lengths give their offsets.
		start := pos
		pos += len(z.Raw())
		switch tt {
		case xhtml.ErrorToken:
			if changed {
				out = append(out, body[copied:]...)
				clean = string(out)
			} else {
				clean = body
			}
			return clean, tidyLines(b), links
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
			name, hasAttr := z.TagName()
			if blockElements[string(name)] {
				b = append(b, '\n')
			}
			tag := string(name)
			switch {
			case hiddenElements[tag] && tt == xhtml.StartTagToken:
				hidden++
			case hiddenElements[tag] && tt == xhtml.EndTagToken && hidden > 0:
				hidden--
			case tag == "pre" && tt == xhtml.StartTagToken:
				pre++
			case tag == "pre" && tt == xhtml.EndTagToken && pre > 0:
				pre--
			}
			if !hasAttr || tt == xhtml.EndTagToken || (tag != "a" && !styled) {
				continue
			}
			attrs, rewritten = attrs[:0], false
			for hasAttr {
				var key, val []byte
				key, val, hasAttr = z.TagAttr()
				a := xhtml.Attribute{Key: string(key), Val: string(val)}
				switch {
				case a.Key == "style":
					if clean := cleanStyle(a.Val); clean != a.Val {
						a.Val, rewritten = clean, true
					}
				case tag == "a" && a.Key == "href" && a.Val != "" && !seen[a.Val]:
					if seen == nil {
						seen = map[string]bool{}
					}
					seen[a.Val] = true
					links = append(links, a.Val)
				}
				attrs = append(attrs, a)
			}
			if rewritten {
				changed = true
				out = append(append(out, body[copied:start]...), '<')
				out = append(out, tag...)
				for _, a := range attrs {
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
}

// renderBuffers hold render's two buffers between messages: each is as
// long as a body, and both are copied out before render returns.
var renderBuffers = sync.Pool{New: func() any { return new([2][]byte) }}

// tidyLines makes each line of s its words joined by single spaces, and
// drops the lines left empty: strings.Fields of each line, joined, in one
// pass.
func tidyLines(s []byte) string {
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		var line []byte
		line, s, _ = bytes.Cut(s, []byte{'\n'})
		words, space := false, false
		for i := 0; i < len(line); {
			r, n := rune(line[i]), 1
			if r >= utf8.RuneSelf {
				r, n = utf8.DecodeRune(line[i:])
			}
			if unicode.IsSpace(r) {
				space = true
			} else {
				switch {
				case !words && len(out) > 0:
					out = append(out, '\n')
				case words && space:
					out = append(out, ' ')
				}
				out = append(out, line[i:i+n]...)
				words, space = true, false
			}
			i += n
		}
	}
	return string(out)
}
