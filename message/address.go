package message

import (
	"strings"
	"unicode/utf8"
)

// Addresses (RFC 5322 §3.4): the sender of the From field, read from its
// tokens with comments, quoted strings and obsolete forms, as readers do.

// sender returns the address and display name of the first mailbox in
// the From header that holds one, or envelopeFrom and no name when there
// is none (spec §3). The name is RFC 2047-decoded as well as it can be.
func sender(from string, envelopeFrom string) (addr, name string) {
	addr, name, ok := firstMailbox(from)
	if !ok {
		return envelopeFrom, ""
	}
	return addr, name
}

// addrToken is a lexical token of an address header (RFC 5322 §3.2).
type addrToken struct {
	kind  byte   // 'a' atom, '"' quoted string, '(' comment, '<' angle address, or the special itself
	text  string // the atom, the string unquoted, the comment's text, the angle address's content
	space bool   // white space or a comment came before the token
}

// lexAddress splits an address header into tokens. It never fails: an
// unterminated quoted string, comment or angle address runs to the end.
// Raw 8-bit bytes are atom text, so names keep them for decodeHeader.
func lexAddress(v string) []addrToken {
	var (
		toks  []addrToken
		space bool
	)
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case ' ', '\t', '\r', '\n':
			space = true
			i++
		case '(':
			text, n := delimited(v[i:], '(', ')')
			toks = append(toks, addrToken{kind: '(', text: text, space: space})
			space = true
			i += n
		case '"':
			text, n := delimited(v[i:], '"', '"')
			toks = append(toks, addrToken{kind: '"', text: text, space: space})
			space = false
			i += n
		case '<':
			end := strings.IndexByte(v[i+1:], '>')
			if end < 0 {
				end = len(v) - i - 1
			}
			toks = append(toks, addrToken{kind: '<', text: v[i+1 : i+1+end], space: space})
			space = false
			i += 1 + end + 1
		case '[':
			end := strings.IndexByte(v[i:], ']')
			if end < 0 {
				end = len(v) - i - 1
			}
			toks = append(toks, addrToken{kind: 'a', text: v[i : i+end+1], space: space})
			space = false
			i += end + 1
		case ',', ';', ':', '@', '.', '>':
			toks = append(toks, addrToken{kind: c, text: string(c), space: space})
			space = false
			i++
		default:
			j := i
			for j < len(v) && !strings.ContainsRune(" \t\r\n()\"<>[],;:@.", rune(v[j])) {
				j++
			}
			if j == i { // a stray ")"
				j++
			}
			toks = append(toks, addrToken{kind: 'a', text: v[i:j], space: space})
			space = false
			i = j
		}
	}
	return toks
}

// delimited returns the content of the quoted string or comment at the
// start of s, with quoted pairs unescaped (nested comments keep their
// parentheses), and its length in s.
func delimited(s string, open, closing byte) (string, int) {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			continue
		case c == closing && (open != closing || i > 0):
			depth--
			if depth == 0 {
				return b.String(), i + 1
			}
		case c == open:
			depth++
			if depth == 1 {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String(), len(s)
}

// firstMailbox returns the address and decoded display name of the first
// mailbox in the address list v that has a usable address: a local part
// and a domain. Groups (RFC 5322 §3.4) are looked into; comments are
// dropped from addresses, and a comment names a bare address that has no
// display name ("pat@example.test (Pat)"), as readers show it.
func firstMailbox(v string) (addr, name string, ok bool) {
	toks := lexAddress(v)
	start := 0
	begun := false // whether toks[start:i] holds "<" or "@"
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) {
			switch toks[i].kind {
			case '<', '@':
				begun = true
				continue
			case ':':
				// A display name before a colon names a group, unless an
				// address has begun: then it is an obsolete route.
				if !begun {
					start = i + 1
				}
				continue
			case ',', ';':
			default:
				continue
			}
		}
		if addr, name, ok := mailbox(toks[start:i]); ok {
			return addr, name, true
		}
		start, begun = i+1, false
	}
	return "", "", false
}

// mailbox parses one mailbox of an address list: a name and an angle
// address, or a bare address, possibly preceded by words a sender meant
// as the name ("Pat pat@example.test").
func mailbox(toks []addrToken) (addr, name string, ok bool) {
	for i, t := range toks {
		if t.kind == '<' {
			addr, ok = addrSpec(lexAddress(t.text))
			return addr, phrase(toks[:i]), ok
		}
	}
	// Comments in a bare address separate nothing: drop them, and keep
	// the first as the name should there be no other.
	var comment string
	bare := make([]addrToken, 0, len(toks))
	for _, t := range toks {
		if t.kind == '(' {
			if comment == "" {
				comment = t.text
			}
			continue
		}
		bare = append(bare, t)
	}
	toks = bare
	at := -1
	for i, t := range toks {
		if t.kind == '@' {
			at = i
			break
		}
	}
	if at < 0 {
		return "", "", false
	}
	// The address is the tokens around "@" that hang together: a space
	// ends it, except around the dots of obsolete "pat . doe".
	joined := func(i int) bool { // whether toks[i] continues toks[i-1]
		return !toks[i].space || toks[i].kind == '.' || toks[i-1].kind == '.' || toks[i].kind == '@' || toks[i-1].kind == '@'
	}
	begin := at
	for begin > 0 && isAddrPart(toks[begin-1]) && joined(begin) {
		begin--
	}
	end := at + 1
	for end < len(toks) && isAddrPart(toks[end]) && joined(end) {
		end++
	}
	addr, ok = addrSpec(toks[begin:end])
	if !ok {
		return "", "", false
	}
	if name = phrase(toks[:begin]); name == "" {
		name = strings.TrimSpace(decodeHeader(comment))
	}
	return addr, name, true
}

func isAddrPart(t addrToken) bool {
	return t.kind == 'a' || t.kind == '"' || t.kind == '.'
}

// addrSpec returns the address that toks spell, local@domain, with
// comments and an obsolete source route ("@relay.test:pat@example.test")
// dropped. It reports false unless there is exactly one "@" with a local
// part before it and a domain after it.
func addrSpec(toks []addrToken) (string, bool) {
	for i := len(toks) - 1; i >= 0; i-- {
		if toks[i].kind == ':' {
			toks = toks[i+1:]
			break
		}
	}
	var local, domain strings.Builder
	dst := &local
	ats := 0
	var prev byte // the kind of the last token that was not a comment
	for _, t := range toks {
		if t.kind == '(' {
			continue
		}
		word := t.kind == 'a' || t.kind == '"'
		if word && (prev == 'a' || prev == '"') {
			return "", false // "pat doe@example.test": two words, not a local part
		}
		switch t.kind {
		case '@':
			ats++
			dst = &domain
		case '"':
			dst.WriteString(quoteLocal(t.text))
		case 'a', '.':
			dst.WriteString(t.text)
		default:
			return "", false
		}
		prev = t.kind
	}
	if ats != 1 || local.Len() == 0 || domain.Len() == 0 {
		return "", false
	}
	return rawToUTF8(local.String() + "@" + domain.String()), true
}

// quoteLocal returns s, a quoted local part unquoted, quoted again if it
// needs to be (RFC 5322 §3.4.1: dot-atom text stands bare).
func quoteLocal(s string) string {
	bare := s != "" && !strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".") && !strings.Contains(s, "..")
	for i := 0; i < len(s) && bare; i++ {
		bare = s[i] >= utf8.RuneSelf || strings.IndexByte(" \t\"(),.:;<>@[\\]", s[i]) < 0 || s[i] == '.'
	}
	if bare {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// phrase returns the display name toks spell, comments dropped, words
// joined by single spaces, and decoded.
func phrase(toks []addrToken) string {
	var b strings.Builder
	for _, t := range toks {
		if t.kind == '(' {
			continue
		}
		if t.space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return strings.TrimSpace(decodeHeader(b.String()))
}
