package message

import (
	"net/url"
	"regexp"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/microcosm-cc/bluemonday"
)

// The fast sanitizer writes what the policy's bluemonday would write for
// the HTML of most mail, at a fraction of the cost: bluemonday runs x/net's
// tokenizer, makes a Token of strings for every tag and text, quotes every
// element name with strconv and formats every tag again (a fifth of a
// newsletter's delivery, and half of what it allocated). Here the HTML is
// read in place and written straight to the body.
//
// It reads what it knows exactly as x/net/html's Tokenizer reads it, and
// applies the rules of bluemonday's sanitize (v1.0.27) for the policy's
// settings: the elements and attributes it allows, the elements whose
// content it drops, the URL checks and the rel and target it adds to links.
// The policy is sanitize.go's rules, from which newPolicy builds
// bluemonday's Policy, so the two never disagree on what is allowed.
// Whatever it is not sure to read alike (a script, a "<" that is not a
// tag, an attribute value whose character references the tokenizer would
// read otherwise in an attribute, a tag cut off by the end of the input)
// sends the whole body to bluemonday instead. FuzzFastSanitize and TestFastSanitizePolicy hold the two to the
// same output.

// policyView is what the fast sanitizer needs of the policy.
type policyView struct {
	elements map[string]map[string][]*regexp.Regexp // allowed elements, their attributes and the patterns a value must match (nil: any)
	global   map[string][]*regexp.Regexp            // attributes allowed on every element
	noAttrs  map[string]bool                        // elements kept without attributes
	skip     map[string]bool                        // elements whose content is dropped
}

// htmlElements are the element names whose content bluemonday may drop
// when they are not allowed: every element of HTML, and those of its
// own default list that HTML does not have. Which of them it drops is
// asked of bluemonday itself (newPolicyView); an element of another name
// keeps its content, as bluemonday's default list has it.
var htmlElements = []string{"a", "abbr", "acronym", "address", "applet", "area", "article", "aside", "audio", "b", "base",
	"basefont", "bdi", "bdo", "bgsound", "big", "blink", "blockquote", "body", "br", "button", "canvas", "caption", "center",
	"cite", "code", "col", "colgroup", "data", "datalist", "dd", "del", "details", "dfn", "dialog", "dir", "div", "dl", "dt",
	"em", "embed", "fieldset", "figcaption", "figure", "font", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4",
	"h5", "h6", "head", "header", "hgroup", "hr", "html", "i", "iframe", "image", "img", "input", "ins", "isindex", "kbd",
	"keygen", "label", "legend", "li", "link", "listing", "main", "map", "mark", "marquee", "math", "menu", "menuitem",
	"meta", "meter", "multicol", "nav", "nextid", "nobr", "noembed", "noframes", "noscript", "nostyle", "object", "ol",
	"optgroup", "option", "output", "p", "param", "picture", "plaintext", "portal", "pre", "progress", "q", "rb", "rp", "rt",
	"rtc", "ruby", "s", "samp", "script", "search", "section", "select", "slot", "small", "source", "spacer", "span", "strike",
	"strong", "style", "sub", "summary", "sup", "svg", "table", "tbody", "td", "template", "textarea", "tfoot", "th", "thead",
	"time", "title", "tr", "track", "tt", "u", "ul", "var", "video", "wbr", "xmp"}

// newPolicyView returns the rules of sanitize.go as the fast sanitizer
// reads them. Two sets are bluemonday's own defaults rather than burner's
// rules, and are asked of p, the Policy newPolicy built of the same
// rules: which allowed elements stay without attributes, and which
// elements that are not allowed take their content with them.
func newPolicyView(p *bluemonday.Policy) *policyView {
	v := &policyView{elements: map[string]map[string][]*regexp.Regexp{}, global: map[string][]*regexp.Regexp{},
		noAttrs: map[string]bool{}, skip: map[string]bool{}}
	element := func(name string) map[string][]*regexp.Regexp {
		if v.elements[name] == nil {
			v.elements[name] = map[string][]*regexp.Regexp{}
		}
		return v.elements[name]
	}
	for _, name := range bareElements {
		element(name)
	}
	for _, r := range attrRules {
		for _, a := range r.attrs {
			if len(r.on) == 0 {
				v.global[a] = append(v.global[a], r.match)
			}
			for _, name := range r.on {
				attrs := element(name)
				attrs[a] = append(attrs[a], r.match)
			}
		}
	}
	for name := range v.elements {
		v.noAttrs[name] = strings.HasPrefix(p.Sanitize("<"+name+">"), "<"+name)
	}
	for _, name := range htmlElements {
		if _, ok := v.elements[name]; !ok {
			v.skip[name] = !strings.Contains(p.Sanitize("<"+name+">x</"+name+">"), "x")
		}
	}
	return v
}

// fastSanitizer is the state of one body's sanitizing, bluemonday's own.
type fastSanitizer struct {
	p *policyView
	w *capWriter

	skipContent  bool     // inside an element whose content is dropped
	skipping     int      // how many such elements are open
	skipClosing  []string // elements dropped for want of attributes, whose end tags go too
	mostRecent   string   // the last start tag's element, until its end tag
	attrs        []attr   // the tag being read
	clean, spare []attr   // its attributes as they are written
}

// maxFastAttrs bounds the attributes of a tag the fast sanitizer reads;
// mail has a handful.
const maxFastAttrs = 64

// attr is an attribute of a tag: its key lower-cased and its value
// unescaped, as x/net/html's Token has them.
type attr struct{ key, val string }

// notFast ends the fast sanitizer where bluemonday must take over.
type notFast struct{}

// fastSanitize writes to w what bluemonday would write sanitizing html
// under p, and reports whether it did; false means html holds something
// it does not read (w then holds part of a body, to be thrown away).
func fastSanitize(p *policyView, html string, w *capWriter) (ok bool) {
	if p == nil {
		return false
	}
	s := fastSanitizer{p: p, w: w}
	defer func() {
		if r := recover(); r != nil {
			if _, notOurs := r.(notFast); !notOurs {
				panic(r)
			}
			ok = false
		}
	}()
	s.run(html)
	return true
}

// bail gives the body to bluemonday.
func bail() { panic(notFast{}) }

// write reports whether w took all of b; when it is full, nothing more
// matters (bluemonday stops there too).
func (s *fastSanitizer) write(b string) bool {
	_, err := s.w.WriteString(b)
	return err == nil
}

func (s *fastSanitizer) run(h string) {
	for i := 0; i < len(h); {
		lt := strings.IndexByte(h[i:], '<')
		if lt < 0 {
			s.text(h[i:])
			return
		}
		if lt > 0 {
			if !s.text(h[i : i+lt]) {
				return
			}
			i += lt
		}
		// h[i] is '<'.
		if i+1 >= len(h) {
			bail() // "<" at the very end: text to the tokenizer
		}
		c := h[i+1]
		var n int
		var more bool
		switch {
		case isLetter(c):
			n, more = s.startTag(h[i:])
		case c == '/':
			n, more = s.endTag(h[i:])
		case c == '!':
			n = markupDeclaration(h[i:])
			more = true
		default:
			bail() // "<?": a bogus comment, or a "<" of text
		}
		if !more {
			return
		}
		i += n
	}
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isTagSpace is the white space of the tokenizer's tags.
func isTagSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' }

// text handles a text token (raw: of a raw text element, not unescaped).
func (s *fastSanitizer) text(t string) bool {
	return s.textToken(t, false)
}

func (s *fastSanitizer) textToken(t string, raw bool) bool {
	if s.skipContent || s.mostRecent == "style" {
		return true
	}
	if !raw && strings.IndexByte(t, '&') >= 0 {
		// As the tokenizer's Token has it: newlines converted, then
		// references unescaped.
		return s.escaped(xhtml.UnescapeString(normalizeNewlines(t)), false)
	}
	// Newlines converted as the text is escaped: mail's HTML comes with
	// CRLF, and a copy of each text without its CRs is garbage.
	return s.escaped(t, true)
}

// htmlEscaped[c] says that EscapeString replaces the byte c.
var htmlEscaped = [256]bool{'&': true, '\'': true, '<': true, '>': true, '"': true, '\r': true}

// escaped writes t as x/net/html's EscapeString writes it; with
// newlines, it first converts t's newlines as convertNewlines does.
func (s *fastSanitizer) escaped(t string, newlines bool) bool {
	for len(t) > 0 {
		i := -1
		for j := 0; j < len(t); j++ {
			if htmlEscaped[t[j]] {
				i = j
				break
			}
		}
		if i < 0 {
			return s.write(t)
		}
		if !s.write(t[:i]) {
			return false
		}
		var esc string
		switch t[i] {
		case '\r':
			esc = "&#13;"
			if newlines {
				esc = "\n"
				if i+1 < len(t) && t[i+1] == '\n' {
					esc = "" // the LF after it stays
				}
			}
		case '&':
			esc = "&amp;"
		case '\'':
			esc = "&#39;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&#34;"
		}
		if !s.write(esc) {
			return false
		}
		t = t[i+1:]
	}
	return true
}

// markupDeclaration returns the length of the "<!…" token at the start of
// h: a comment, a doctype or a bogus comment, none of which is written.
func markupDeclaration(h string) int {
	if strings.HasPrefix(h, "<!--") {
		return 4 + commentEnd(h[4:])
	}
	// A doctype or a bogus comment (CDATA is one too, outside foreign
	// content): to the next ">".
	end := strings.IndexByte(h[2:], '>')
	if end < 0 {
		bail()
	}
	return 2 + end + 1
}

// commentEnd returns the length of the comment's rest after "<!--", up to
// and including its end, as the tokenizer's readComment finds it.
func commentEnd(h string) int {
	dashes, beginning := 0, true
	for i := 0; i < len(h); i++ {
		switch h[i] {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return i + 1
			}
		case '!':
			if dashes >= 2 {
				if i+1 >= len(h) {
					bail()
				}
				i++
				switch h[i] {
				case '>':
					return i + 1
				case '-':
					dashes, beginning = 1, false
					continue
				}
			}
		}
		dashes, beginning = 0, false
	}
	bail() // a comment to the end of the input
	return 0
}

// tagName returns the lower-cased name at the start of h (after "<" or
// "</") and its length: letters and digits only, which the tokenizer
// reads alike whatever follows.
func tagName(h string) (string, int) {
	i := 0
	lower := true
	for i < len(h) && (isLetter(h[i]) || '0' <= h[i] && h[i] <= '9') {
		if 'A' <= h[i] && h[i] <= 'Z' {
			lower = false
		}
		i++
	}
	if i == len(h) || !(isTagSpace(h[i]) || h[i] == '/' || h[i] == '>') {
		bail()
	}
	if lower {
		return h[:i], i
	}
	return strings.ToLower(h[:i]), i
}

// startTag reads the start tag at the start of h, applies the policy, and
// returns its length (and that of the raw text after it, for a raw text
// element).
func (s *fastSanitizer) startTag(h string) (int, bool) {
	name, n := tagName(h[1:])
	i := 1 + n
	s.attrs = s.attrs[:0]
	lastValEnd := -1 // where the value of the last attribute kept ends, in h
	for {
		for i < len(h) && isTagSpace(h[i]) {
			i++
		}
		if i >= len(h) {
			bail()
		}
		if h[i] == '>' {
			break
		}
		if h[i] == '/' {
			// "/" then ">" ends a self-closing tag; "/" anywhere else is
			// read by rules not followed here.
			if i+1 < len(h) && h[i+1] == '>' {
				i++
				break
			}
			bail()
		}
		// An attribute: its key up to white space, "=", "/" or ">".
		k := i
		for i < len(h) && !isTagSpace(h[i]) && h[i] != '=' && h[i] != '/' && h[i] != '>' {
			switch h[i] {
			case '"', '\'', '<':
				bail()
			}
			i++
		}
		if i == k || i >= len(h) {
			bail()
		}
		key := h[k:i]
		j := i
		for j < len(h) && isTagSpace(h[j]) {
			j++
		}
		val, valEnd := "", -1
		if j < len(h) && h[j] == '=' {
			j++
			for j < len(h) && isTagSpace(h[j]) {
				j++
			}
			if j >= len(h) {
				bail()
			}
			switch q := h[j]; q {
			case '"', '\'':
				end := strings.IndexByte(h[j+1:], q)
				if end < 0 {
					bail()
				}
				val, valEnd = h[j+1:j+1+end], j+1+end
				i = j + 1 + end + 1
			case '>':
				bail()
			default:
				v := j
				for j < len(h) && !isTagSpace(h[j]) && h[j] != '>' {
					switch h[j] {
					case '"', '\'', '<', '=', '`':
						bail()
					}
					j++
				}
				if j >= len(h) {
					bail()
				}
				val, valEnd = h[v:j], j
				i = j
			}
			if i < len(h) && !isTagSpace(h[i]) && h[i] != '>' && h[i] != '/' {
				bail() // an attribute right after a quoted value
			}
		}
		// The first of a key is kept, as the tokenizer keeps it. hasAttr
		// looks at each kept: a tag of thousands of attributes is
		// bluemonday's, whose tokenizer keeps their names in a map.
		if len(s.attrs) >= maxFastAttrs {
			bail()
		}
		key = lowerKey(key)
		if !s.hasAttr(key) {
			s.attrs = append(s.attrs, attr{key: key, val: s.attrValue(val)})
			lastValEnd = valEnd
		}
	}
	// h[i] is '>'. "/>" closes the tag unless that "/" ends the value of
	// the last attribute kept (the tokenizer's test).
	selfClosing := h[i-1] == '/' && (len(s.attrs) == 0 || i-1 != lastValEnd-1)
	i++
	if name == "script" || name == "plaintext" {
		// Read by rules not followed here. Bailing before start means no
		// script reaches start, selfClosing or text: they need no case for
		// one.
		bail()
	}
	more := true
	if selfClosing {
		more = s.selfClosing(name)
	} else {
		more = s.start(name)
	}
	if rawTextElement(name) {
		n, ok := s.rawText(name, h[i:])
		i += n
		more = more && ok
	}
	return i, more
}

// hasAttr reports whether the tag being read has key already.
func (s *fastSanitizer) hasAttr(key string) bool {
	for _, a := range s.attrs {
		if a.key == key {
			return true
		}
	}
	return false
}

// lowerKey lower-cases an attribute key as the tokenizer does (ASCII
// only); bytes from 0x80 and NUL go to bluemonday.
func lowerKey(k string) string {
	upper := false
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c >= 0x80 || c == 0:
			bail()
		case 'A' <= c && c <= 'Z':
			upper = true
		}
	}
	if upper {
		return strings.ToLower(k)
	}
	return k
}

// attrValue returns an attribute value as the tokenizer's Token has it:
// newlines converted, character references unescaped as in an attribute.
// Those are read as in text when the two reads agree (see safeAttrRefs),
// and otherwise the body goes to bluemonday.
func (s *fastSanitizer) attrValue(v string) string {
	if strings.IndexByte(v, 0) >= 0 {
		bail() // the tokenizer makes it U+FFFD
	}
	v = normalizeNewlines(v) // x/net/html's convertNewlines
	if strings.IndexByte(v, '&') < 0 {
		return v
	}
	if !safeAttrRefs(v) {
		bail()
	}
	return xhtml.UnescapeString(v)
}

// safeAttrRefs reports whether every character reference in v reads the
// same in an attribute as in text (xhtml.UnescapeString). They differ only
// for a named reference: in text a prefix of the name may match ("&notit"
// is "¬it"), in an attribute only the whole name, and not at all when it
// has no ";" and "=" follows. A reference that matches nothing in text
// matches nothing in an attribute; one that text reads whole, an attribute
// reads alike (unless "=" follows); the rest are refused. Text's read is
// told whole when nothing of the reference is left after it: a prefix
// match leaves the name's last byte.
func safeAttrRefs(v string) bool {
	for i := strings.IndexByte(v, '&'); i >= 0; {
		j := i + 1
		for j < len(v) && (isLetter(v[j]) || '0' <= v[j] && v[j] <= '9') {
			j++
		}
		if j > i+1 && !(i+1 < len(v) && v[i+1] == '#') {
			semi := j < len(v) && v[j] == ';'
			ref := v[i:j]
			if semi {
				ref = v[i : j+1]
			}
			if read := xhtml.UnescapeString(ref); read != ref {
				if !semi && j < len(v) && v[j] == '=' {
					return false // literal in an attribute, read in text
				}
				if read[len(read)-1] == ref[len(ref)-1] {
					return false // maybe a prefix match
				}
			}
		}
		next := strings.IndexByte(v[i+1:], '&')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return true
}

// rawText reads the content of the raw text element name (not script or
// plaintext), h starting after its start tag, up to its end tag, which it
// leaves; it returns the length read.
func (s *fastSanitizer) rawText(name, h string) (int, bool) {
	for i := 0; ; {
		lt := strings.Index(h[i:], "</")
		if lt < 0 {
			bail() // to the end of the input
		}
		e := i + lt + 2
		if e+len(name) < len(h) && equalFoldASCII(h[e:e+len(name)], name) {
			switch h[e+len(name)] {
			case ' ', '\n', '\r', '\t', '\f', '/', '>':
				end := i + lt
				if end == 0 {
					return 0, true
				}
				if strings.IndexByte(h[:end], 0) >= 0 {
					bail() // the tokenizer makes it U+FFFD in raw text
				}
				// RCDATA (title, textarea) has its references read.
				return end, s.textToken(h[:end], name != "title" && name != "textarea")
			}
		}
		i = e
	}
}

// equalFoldASCII reports whether s is name (lower-case letters) in any
// case of ASCII letters, as the tokenizer compares an end tag with the
// raw text element it ends.
func equalFoldASCII(s, name string) bool {
	for i := 0; i < len(name); i++ {
		if c := s[i]; c != name[i] && c != name[i]-('a'-'A') {
			return false
		}
	}
	return true
}

// start applies bluemonday's rules to a start tag.
func (s *fastSanitizer) start(name string) bool {
	s.mostRecent = name
	if name == "style" {
		return true
	}
	aps, ok := s.p.elements[name]
	if !ok {
		if s.p.skip[name] {
			s.skipContent = true
			s.skipping++
		}
		return true
	}
	attrs := s.allowAttrs(name, aps)
	if len(attrs) == 0 && !s.p.noAttrs[name] {
		s.skipClosing = append(s.skipClosing, name)
		return true
	}
	if s.skipContent {
		return true
	}
	return s.tag(name, attrs, ">")
}

// selfClosing applies bluemonday's rules to a self-closing tag.
func (s *fastSanitizer) selfClosing(name string) bool {
	if name == "style" {
		return true
	}
	aps, ok := s.p.elements[name]
	if !ok {
		return true
	}
	attrs := s.allowAttrs(name, aps)
	if len(attrs) == 0 && !s.p.noAttrs[name] || s.skipContent {
		return true
	}
	return s.tag(name, attrs, "/>")
}

// endTag reads the end tag at the start of h, applies bluemonday's rules,
// and returns its length.
func (s *fastSanitizer) endTag(h string) (int, bool) {
	if len(h) < 3 || !isLetter(h[2]) {
		bail() // "</>" or a bogus comment
	}
	name, n := tagName(h[2:])
	i := 2 + n
	for i < len(h) && isTagSpace(h[i]) {
		i++
	}
	if i >= len(h) || h[i] != '>' {
		bail() // attributes or "/" in an end tag
	}
	i++
	if s.mostRecent == name {
		s.mostRecent = ""
	}
	if name == "script" || name == "style" {
		return i, true
	}
	if len(s.skipClosing) > 0 && s.skipClosing[len(s.skipClosing)-1] == name {
		s.skipClosing = s.skipClosing[:len(s.skipClosing)-1]
		return i, true
	}
	if _, ok := s.p.elements[name]; !ok {
		if s.p.skip[name] {
			if s.skipping--; s.skipping == 0 {
				s.skipContent = false
			}
		}
		return i, true
	}
	if s.skipContent {
		return i, true
	}
	return i, s.write("</") && s.write(name) && s.write(">")
}

// tag writes a start or self-closing tag as x/net/html's Token.String.
func (s *fastSanitizer) tag(name string, attrs []attr, end string) bool {
	if !s.write("<") || !s.write(name) {
		return false
	}
	for _, a := range attrs {
		if !s.write(" ") || !s.write(a.key) || !s.write(`="`) || !s.escaped(a.val, false) || !s.write(`"`) {
			return false
		}
	}
	return s.write(end)
}

// allowAttrs returns the attributes of the tag being read that the policy
// keeps on element name (aps its own), as bluemonday's sanitizeAttrs.
func (s *fastSanitizer) allowAttrs(name string, aps map[string][]*regexp.Regexp) []attr {
	clean := s.clean[:0]
	defer func() { s.clean = clean[:0] }()
	for _, a := range s.attrs {
		if allowedBy(aps[a.key], a.val) || allowedBy(s.p.global[a.key], a.val) {
			clean = append(clean, a)
		}
	}
	if len(clean) == 0 || !linkable(name) {
		return clean
	}
	// URLs must parse and pass the scheme's checks. An href that names a
	// host makes the link external (bluemonday parses the URL it wrote
	// again to know; the host is the same).
	kept := clean[:0]
	hrefFound, external := false, false
	for _, a := range clean {
		if urlAttr(name, a.key) {
			u, ok := validURL(a.val)
			if !ok {
				continue
			}
			a.val = u.String()
			if a.key == "href" {
				hrefFound = true
				external = external || u.Host != ""
			}
		}
		kept = append(kept, a)
	}
	clean = kept
	if len(clean) == 0 || !(requireNoFollow || targetBlankLinks) {
		return clean
	}
	switch name {
	case "a", "area", "base", "link":
	default:
		return clean
	}
	if !hrefFound {
		return clean
	}
	addNoFollow := requireNoFollow
	addTargetBlank := external && targetBlankLinks
	noFollowFound, targetBlankFound := false, false
	tmp := s.spare[:0]
	for _, a := range clean {
		appended := false
		if a.key == "rel" && addNoFollow {
			if !strings.Contains(a.val, "nofollow") {
				a.val += " nofollow"
			}
			noFollowFound = true
			tmp = append(tmp, a)
			appended = true
		}
		if name == "a" && a.key == "target" {
			if a.val == "_blank" {
				targetBlankFound = true
			}
			if addTargetBlank && !targetBlankFound {
				a.val = "_blank"
				targetBlankFound = true
				tmp = append(tmp, a)
				appended = true
			}
		}
		if !appended {
			tmp = append(tmp, a)
		}
	}
	if noFollowFound || targetBlankFound {
		clean, tmp = tmp, clean
	}
	s.spare = tmp[:0]
	if addNoFollow && !noFollowFound {
		clean = append(clean, attr{key: "rel", val: "nofollow"})
	}
	if name == "a" && addTargetBlank && !targetBlankFound {
		clean = append(clean, attr{key: "target", val: "_blank"})
		targetBlankFound = true
	}
	if targetBlankFound {
		noOpener := false
		for i := range clean {
			if clean[i].key == "rel" {
				if !strings.Contains(clean[i].val, "noopener") {
					clean[i].val += " noopener"
				}
				noOpener = true
			}
		}
		if !noOpener {
			clean = append(clean, attr{key: "rel", val: "noopener"})
		}
	}
	return clean
}

// allowedBy reports whether val passes one of an attribute's policies;
// nil patterns allow nothing (the attribute has none), a nil pattern
// anything.
func allowedBy(patterns []*regexp.Regexp, val string) bool {
	for _, re := range patterns {
		if re == nil || re.MatchString(val) {
			return true
		}
	}
	return false
}

// linkable is bluemonday's list of elements with URL attributes.
func linkable(name string) bool {
	switch name {
	case "a", "area", "base", "link", "blockquote", "del", "ins", "q",
		"audio", "embed", "iframe", "img", "input", "script", "track", "video":
		return true
	}
	return false
}

// urlAttr reports whether key is the URL attribute bluemonday checks on
// element name.
func urlAttr(name, key string) bool {
	switch name {
	case "a", "area", "base", "link":
		return key == "href"
	case "blockquote", "del", "ins", "q":
		return key == "cite"
	case "audio", "embed", "iframe", "img", "script", "source", "track", "video":
		return key == "src"
	}
	return false
}

// validURL is bluemonday's check of a URL attribute under a policy that
// requires parseable URLs: the URL, which it writes as u.String(), or
// false.
func validURL(raw string) (*url.URL, bool) {
	raw = strings.TrimSpace(raw)
	if strings.ContainsAny(raw, " \t\n") {
		// Only a data: URL may hold white space, and the policies burner
		// makes allow no data: scheme: bluemonday refuses it too, after
		// more work.
		if strings.HasPrefix(raw, "data:") {
			if _, ok := urlSchemes["data"]; ok {
				bail()
			}
		}
		return nil, false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, false
	}
	if u.Scheme != "" {
		checks, ok := urlSchemes[u.Scheme]
		if !ok {
			return nil, false
		}
		if len(checks) == 0 {
			return u, true
		}
		for _, check := range checks {
			if check(u) {
				return u, true
			}
		}
		return nil, false
	}
	if allowRelativeURLs && u.String() != "" {
		return u, true
	}
	return nil, false
}
