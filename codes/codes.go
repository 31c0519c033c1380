// Package codes finds the one-time codes of an email in its subject and
// text (spec §7): by the default rule (Find), or by a sender's regular
// expression (Compile, then Pattern.Match). It is a pure text algorithm:
// it reads no mail and no request; server turns its errors into the 400.
//
// Every step is one pass over the subject and the text, or a bounded
// amount of work at a position: time linear in the text, whatever it holds
// (BenchmarkCodes: 1 MiB of digits, keywords, dates and URLs in tens of
// milliseconds).
package codes

import (
	"errors"
	"io"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPatternRunes is the longest pattern= (spec §7), counted in characters
// as a person writing one counts them.
const maxPatternRunes = 256

// keywordWindow is how many characters before a code its keyword must lie
// within (spec §7). They are runes, what a reader counts: "Código: " is
// eight characters, whatever its UTF-8 takes.
const keywordWindow = 40

// codeKeywords are the words that say a number is a code (spec §7), in
// lower case.
var codeKeywords = []string{
	"code", "codes", "otp", "pin", "passcode", "password", "verification", "verify",
	"confirm", "confirmation", "security", "login", "sign-in", "one-time", "token", "2fa",
}

// maxKeywordLen is the length of the longest keyword, "verification".
const maxKeywordLen = 12

// ErrBadPattern is Compile's error for a pattern that is longer than
// maxPatternRunes or is not a regular expression RE2 takes.
var ErrBadPattern = errors.New("codes: not a usable regular expression")

// Compile compiles a pattern= (spec §7), or returns ErrBadPattern.
func Compile(p string) (*Pattern, error) {
	if utf8.RuneCountInString(p) > maxPatternRunes {
		return nil, ErrBadPattern
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, ErrBadPattern
	}
	cp := &Pattern{re: re}
	tree, err := syntax.Parse(p, syntax.Perl) // as regexp.Compile parses
	if err == nil && looksBehind(tree) {
		// One character before the search, consumed, gives the assertions
		// their context; the lazy skip then finds the leftmost match. The
		// parsed form, not p: an unterminated \Q in p would quote the ")".
		cp.after, err = regexp.Compile(`^(?s:.)(?s:.*?)(` + tree.String() + `)`)
	}
	if err != nil {
		return nil, ErrBadPattern
	}
	return cp, nil
}

// Pattern is a compiled pattern=. regexp is RE2: a search takes time
// linear in the text it is given, whatever the pattern.
type Pattern struct {
	re *regexp.Regexp
	// after is re for a search that starts past the beginning of a text
	// when re has an assertion about the character before a position (^,
	// \A, \b, \B), which a search in the rest of the text would not see;
	// nil when re has none.
	after *regexp.Regexp
}

// looksBehind reports whether re has an assertion about what comes before
// a position.
func looksBehind(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	return slices.ContainsFunc(re.Sub, looksBehind)
}

// patternWork bounds the work of a pattern= request: the characters its
// searches read, per character of the subject and text. A search reads
// from where the last match ended to where its match ends, and some
// patterns read further to rule out a longer match (a(?:.*b)? over a
// line of a's reads the rest of the line each time): every match of them
// costs time quadratic in the text, with FindAll too. Patterns that read
// each character once or twice stay far below the bound.
const patternWork = 8

// ErrTooCostly is Match's error for a pattern whose matches cost more than
// patternWork over the text: spec §7 has one message for it and for
// ErrBadPattern, a pattern= that cannot be used.
var ErrTooCostly = errors.New("codes: pattern reads the text too often")

// next returns the first match of p in s at or after pos, as
// FindAllStringSubmatchIndex would find it searching from pos, and its
// first group (the match itself when p has none; -1, -1 when the group
// is unset). Searching match by match keeps one match in memory, where
// FindAll would keep them all: tens of bytes for each character of a
// text that matches everywhere. in counts what the searches read; next
// reports ErrTooCostly when they have read all they may.
func (p *Pattern) next(s string, pos int, in *runeCounter) (match, group [2]int, ok bool, err error) {
	re, off, first := p.re, pos, 0
	if pos > 0 && p.after != nil {
		_, w := utf8.DecodeLastRuneInString(s[:pos])
		re, off, first = p.after, pos-w, 2
	}
	in.s = s[off:]
	m := re.FindReaderSubmatchIndex(in)
	if in.left < 0 {
		return match, group, false, ErrTooCostly
	}
	if m == nil {
		return match, group, false, nil
	}
	match = [2]int{off + m[first], off + m[first+1]}
	group = match
	if p.re.NumSubexp() > 0 {
		group = [2]int{-1, -1}
		if m[first+2] >= 0 {
			group = [2]int{off + m[first+2], off + m[first+3]}
		}
	}
	return match, group, true, nil
}

// runeCounter gives regexp the runes of s, as a string search decodes
// them, and counts them against a budget: past it, the text ends, and the
// caller throws the answer away.
type runeCounter struct {
	s    string
	left int // -1 once the budget ran out before the text
}

func (c *runeCounter) ReadRune() (rune, int, error) {
	if c.s == "" || c.left <= 0 {
		if c.s != "" {
			c.left = -1
		}
		return 0, 0, io.EOF
	}
	c.left--
	r, size := firstRune(c.s)
	c.s = c.s[size:]
	return r, size, nil
}

// Match returns every match of p in subject (nil when the email has
// none), then in text, each once: its first capturing group when it has
// one, and never an empty one; or ErrTooCostly.
func (p *Pattern) Match(subject *string, text string) ([]string, error) {
	out := []string{}
	seen := make(map[string]struct{})
	in := &runeCounter{left: patternWork * (len(text) + 1)}
	if subject != nil {
		in.left += patternWork * (len(*subject) + 1)
	}
	for _, src := range [2]*string{subject, &text} {
		if src == nil {
			continue
		}
		s := *src
		// The steps of regexp's FindAll: after an empty match, one
		// character on.
		for pos := 0; pos <= len(s); {
			match, group, ok, err := p.next(s, pos, in)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			if match[1] > pos {
				pos = match[1]
			} else if pos < len(s) {
				_, w := utf8.DecodeRuneInString(s[pos:])
				pos += w
			} else {
				pos++
			}
			if group[0] >= group[1] {
				continue // empty or unset
			}
			code := s[group[0]:group[1]]
			if _, ok := seen[code]; !ok {
				seen[code] = struct{}{}
				out = append(out, code)
			}
		}
	}
	return out, nil
}

// Find returns the codes of the default rule of spec §7 in subject
// (nil when the email has none) and text: those with a keyword before
// them first, then the others; within each, the subject's before the
// text's, in order; each code once, where it first comes in that order.
func Find(subject *string, text string) []string {
	f := codeFinder{seen: make(map[string]bool)}
	if subject != nil {
		f.scan(*subject)
	}
	f.scan(text)
	out := slices.Grow(f.keyed, len(f.others))
	for _, code := range f.others {
		if !f.seen[code] {
			out = append(out, code)
		}
	}
	if out == nil {
		return []string{}
	}
	return out
}

// codeFinder collects the codes of the default rule, each once: seen
// holds every code found, true once it was found with a keyword.
type codeFinder struct {
	keyed, others []string
	seen          map[string]bool
}

// codeScan is one left-to-right pass over a subject or a text.
type codeScan struct {
	s    string
	line int // rune index of the current line's first rune
	// kwStart is the rune index of the last keyword seen, -1 before the
	// first; kwEnd the byte offset just past it. Keywords do not overlap
	// (each is a whole word), so the last one is the nearest to a code.
	kwStart, kwEnd int
	// skipTo is the end of the last pair of groups taken: its second group
	// is not a candidate again.
	skipTo int
	toks   [2]codeToken // the last tokens looked at, newest first
}

// codeToken is a run of non-space characters, s[start:end].
type codeToken struct {
	start, end int
	url        int  // where a URL in it starts; end when none does
	at         bool // it has an @: an email address
}

// scan adds the candidates of s to f.
func (f *codeFinder) scan(s string) {
	c := codeScan{s: s, kwStart: -1}
	prevWord, prevDigit := false, false
	n := 0 // the rune index of p
	for p := 0; p < len(s); n++ {
		r, size := rune(s[p]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[p:])
		}
		digit := isASCIIDigit(r)
		// A code cannot hold a keyword (it stands alone), so the keyword
		// that counts for it is found before it.
		if digit && !prevDigit && p >= c.skipTo {
			c.candidate(f, p, n)
		}
		word := isWordRune(r)
		if word && !prevWord {
			c.keyword(p, n)
		}
		if r == '\n' || r == '\r' {
			c.line = n + 1
		}
		prevWord, prevDigit = word, digit
		p += size
	}
}

// candidate looks at the run of digits at p (rune index n) and adds the
// code it starts to f, if any. Two groups of 3 or of 4 digits joined by
// one space or hyphen are one code when they pass as one; else each group
// is looked at alone.
func (c *codeScan) candidate(f *codeFinder, p, n int) {
	s := c.s
	end := p + digitRun(s[p:])
	if l := end - p; l == 3 || l == 4 {
		if sep := groupSeparator(s[end:]); sep > 0 {
			q := end + sep
			if end2 := q + digitRun(s[q:]); end2-q == l {
				if keyed, ok := c.check(p, end2, n, false); ok {
					f.add(s[p:end], s[q:end2], keyed)
					c.skipTo = end2
					return
				}
			}
		}
	}
	if l := end - p; l >= 4 && l <= 8 {
		if keyed, ok := c.check(p, end, n, l == 4 && s[p:end] >= "1900" && s[p:end] <= "2099"); ok {
			f.add(s[p:end], "", keyed)
		}
	}
}

// add notes the code made of the digits head and tail (empty unless a
// pair's). A code found again costs no allocation.
func (f *codeFinder) add(head, tail string, keyed bool) {
	var buf [8]byte
	joined := append(append(buf[:0], head...), tail...)
	wasKeyed, ok := f.seen[string(joined)]
	switch {
	case !ok && !keyed:
		code := string(joined)
		f.seen[code] = false
		f.others = append(f.others, code)
	case keyed && !wasKeyed:
		code := string(joined)
		f.seen[code] = true
		f.keyed = append(f.keyed, code)
	}
}

// check reports whether the candidate s[a:b], at rune index n, is a code,
// and whether it has a keyword before it; a year needs one.
func (c *codeScan) check(a, b, n int, year bool) (keyed, ok bool) {
	s := c.s
	before, at := lastRune(s[:a])
	beforeThat, _ := lastRune(s[:at])
	after, size := firstRune(s[b:])
	afterThat, _ := firstRune(s[b+size:])
	switch {
	case isWordRune(before), isWordRune(after): // not alone
		return false, false
	case isNumberJoin(before) && unicode.IsDigit(beforeThat),
		isNumberJoin(after) && unicode.IsDigit(afterThat): // a larger number, date or time
		return false, false
	case isPriceSign(before), isGroupSpace(before) && isPriceSign(beforeThat), after == '%':
		return false, false
	}
	// A pair joined by a space spans two runs of non-space characters; a
	// URL runs from t.url to the end of its run.
	for _, x := range [2]int{a, b - 1} {
		if t := c.token(x); t.at || t.url < min(b, t.end) {
			return false, false
		}
	}
	keyed = c.kwStart >= 0 && c.kwEnd <= a && c.kwStart >= max(n-keywordWindow, c.line)
	return keyed, keyed || !year
}

// keyword notes a keyword starting at p (rune index n), a word start.
func (c *codeScan) keyword(p, n int) {
	s := c.s[p:]
	// Most words start with no keyword's first letter and cost a switch.
	// Of the other scripts' letters, only one folds to a first letter.
	first, _ := firstRune(s)
	if first == '\u017f' { // ſ, the long s; no keyword starts with k (the Kelvin sign)
		first = 's'
	}
	if first >= utf8.RuneSelf {
		return
	}
	switch byte(first) | 0x20 {
	case 'c', 'o', 'p', 'v', 's', 'l', 't', '2':
	default:
		return
	}
	// ASCII words compare bytes; a word with other characters within a
	// keyword's length compares runes under case folding.
	ascii := true
	for i := range min(len(s), maxKeywordLen) {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for _, kw := range codeKeywords {
		var end int
		var ok bool
		if ascii {
			end, ok = len(kw), len(kw) <= len(s) && asciiFoldEqual(s[:len(kw)], kw)
		} else {
			end, ok = foldedPrefix(s, kw)
		}
		if !ok {
			continue
		}
		if r, _ := firstRune(s[end:]); isWordRune(r) {
			continue // a longer word: "codes" is not "code"
		}
		c.kwStart, c.kwEnd = n, p+end
		return
	}
}

// token returns the run of non-space characters around s[x]. Candidates
// come in order, so the last two runs answer most calls, and each run is
// read a bounded number of times.
func (c *codeScan) token(x int) codeToken {
	for _, t := range c.toks {
		if t.start <= x && x < t.end {
			return t
		}
	}
	s := c.s
	start, end := x, x
	for start > 0 {
		r, i := lastRune(s[:start])
		if unicode.IsSpace(r) {
			break
		}
		start = i
	}
	for end < len(s) {
		r, size := firstRune(s[end:])
		if unicode.IsSpace(r) {
			break
		}
		end += size
	}
	tok := s[start:end]
	t := codeToken{start: start, end: end, url: start + urlStart(tok), at: strings.IndexByte(tok, '@') >= 0}
	c.toks[1], c.toks[0] = c.toks[0], t
	return t
}

// urlStart returns where the first URL in tok starts (spec §7: at a scheme
// and "://", or at "www."), or len(tok). A URL runs to the end of the
// run of non-space characters, so all of tok from there is in it.
func urlStart(tok string) int {
	start := indexWWW(tok)
	for off := 0; off < start; {
		i := strings.Index(tok[off:], "://")
		if i < 0 {
			break
		}
		i += off
		// RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
		// The walk back stops at the previous "://", so no byte is walked twice.
		j := i
		for j > 0 && isSchemeByte(tok[j-1]) {
			j--
		}
		for j < i && !isASCIILetter(tok[j]) {
			j++
		}
		if j < i {
			return min(start, j)
		}
		off = i + 3
	}
	return start
}

// indexWWW returns the index of the first "www." in tok, in any case, or
// len(tok).
func indexWWW(tok string) int {
	for i := 0; i+4 <= len(tok); i++ {
		if tok[i]|0x20 == 'w' && tok[i+1]|0x20 == 'w' && tok[i+2]|0x20 == 'w' && tok[i+3] == '.' {
			return i
		}
	}
	return len(tok)
}

// asciiFoldEqual reports whether the ASCII s is kw (lower-case) in any case.
func asciiFoldEqual(s, kw string) bool {
	for i := 0; i < len(kw); i++ {
		b := s[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != kw[i] {
			return false
		}
	}
	return true
}

// foldedPrefix reports whether s starts with kw (lower-case ASCII) under
// Unicode simple case folding, and how many bytes of s that takes.
func foldedPrefix(s, kw string) (int, bool) {
	p := 0
	for i := 0; i < len(kw); i++ {
		if p >= len(s) {
			return 0, false
		}
		r, size := firstRune(s[p:])
		if !foldsTo(r, kw[i]) {
			return 0, false
		}
		p += size
	}
	return p, true
}

// foldsTo reports whether r is c or folds to it (the Kelvin sign to k).
func foldsTo(r rune, c byte) bool {
	if r == rune(c) {
		return true
	}
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z' && r+'a'-'A' == rune(c)
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == rune(c) {
			return true
		}
	}
	return false
}

// digitRun returns how many ASCII digits s starts with.
func digitRun(s string) int {
	i := 0
	for i < len(s) && isASCIIDigit(rune(s[i])) {
		i++
	}
	return i
}

// groupSeparator returns the size of the one space or hyphen that s
// starts with, or 0. A no-break space counts: HTML mail writes &nbsp;
// where a group must not wrap.
func groupSeparator(s string) int {
	r, size := firstRune(s)
	if r == '-' || isGroupSpace(r) {
		return size
	}
	return 0
}

// firstRune is utf8.DecodeRuneInString, with -1 for no rune at all.
func firstRune(s string) (rune, int) {
	if s == "" {
		return -1, 0
	}
	if s[0] < utf8.RuneSelf {
		return rune(s[0]), 1
	}
	return utf8.DecodeRuneInString(s)
}

// lastRune returns the last rune of s, -1 when s is empty, and where it
// starts.
func lastRune(s string) (rune, int) {
	if s == "" {
		return -1, 0
	}
	if s[len(s)-1] < utf8.RuneSelf {
		return rune(s[len(s)-1]), len(s) - 1
	}
	r, size := utf8.DecodeLastRuneInString(s)
	return r, len(s) - size
}

// isWordRune: a code must not touch a letter, a digit or "_" (spec §7).
// Letters of every script count.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || isASCIIDigit(r) || isASCIILetter(byte(r))
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func isASCIIDigit(r rune) bool { return '0' <= r && r <= '9' }

func isASCIILetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

func isSchemeByte(b byte) bool {
	return isASCIILetter(b) || isASCIIDigit(rune(b)) || b == '+' || b == '-' || b == '.'
}

func isNumberJoin(r rune) bool { return r == '.' || r == ',' || r == '/' || r == ':' || r == '-' }

func isPriceSign(r rune) bool {
	return r == '#' || r == '$' || r == '€' || r == '£' || r == '¥' || r == '+'
}

func isGroupSpace(r rune) bool { return r == ' ' || r == '\u00a0' }
