package message

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Inline styles are checked here rather than by bluemonday's AllowStyles:
// bluemonday parses each style attribute with douceur, whose scanner runs a
// regular expression per token, and that was 40% of parsing a typical
// newsletter (110 µs of 275). The policy lets style attributes through and
// render filters them in the pass it makes over the sanitized body anyway.
//
// The check is deliberately narrower than CSS: a declaration is kept only
// when its property is on the list below and its value is made of
// numbers, words, hex colours, quoted names and the colour functions
// rgb(), rgba(), hsl() and hsla() with numbers inside. Whatever could load
// or run something needs more than that (url(), expression(), escapes,
// comments, at-rules), so it is dropped with its declaration.

// styleProperties are the properties a message may set. display and
// position are left out so that a message cannot cover the page around it.
var styleProperties = map[string]bool{
	"color": true, "background-color": true,
	"font-size": true, "font-weight": true, "font-style": true, "font-family": true,
	"text-align": true, "text-decoration": true, "line-height": true, "vertical-align": true,
	"width": true, "height": true,
	"padding": true, "padding-top": true, "padding-right": true, "padding-bottom": true, "padding-left": true,
	"margin": true, "margin-top": true, "margin-right": true, "margin-bottom": true, "margin-left": true,
	"border": true, "border-top": true, "border-right": true, "border-bottom": true, "border-left": true,
	"border-color": true, "border-style": true, "border-width": true, "border-collapse": true, "border-spacing": true,
	"border-radius": true,
}

// vendorPrefixes are stripped from a property before it is looked up, as
// bluemonday does: -webkit-border-radius is border-radius.
var vendorPrefixes = []string{"-webkit-", "-moz-", "-ms-", "-o-", "mso-", "-xv-", "-atsc-", "-wap-", "-khtml-", "prince-", "-ah-", "-hp-", "-ro-", "-rim-", "-tc-"}

// maxStyle bounds the style attribute cleanStyle reads; real ones are a
// few hundred bytes.
const maxStyle = 8 << 10

// cleanStyle returns the declarations of the style attribute value css
// that are allowed, as "property: value" joined by "; ", or "" when none
// is. An !important is dropped.
func cleanStyle(css string) string {
	if len(css) > maxStyle {
		return ""
	}
	// Most styles come back as they were (bluemonday's output of a body
	// render filtered before is such a style): the declarations are
	// gathered on the stack, and css itself is returned when they spell
	// it, so that only a style that changes costs an allocation.
	var stack [512]byte
	b := stack[:0]
	for decl := range strings.SplitSeq(css, ";") {
		prop, val, ok := strings.Cut(decl, ":")
		if !ok {
			continue
		}
		prop, val = strings.TrimSpace(prop), strings.TrimSpace(val)
		val = trimImportant(val)
		if !allowedProperty(prop) || !safeStyleValue(val) || legacyHook(val) {
			continue
		}
		if len(b) > 0 {
			b = append(b, "; "...)
		}
		b = append(append(append(b, prop...), ": "...), val...)
	}
	if string(b) == css {
		return css
	}
	return string(b)
}

// allowedProperty reports whether prop, in any case and with or without a
// vendor prefix, is one of styleProperties.
func allowedProperty(prop string) bool {
	if prop == "" || len(prop) > 40 {
		return false
	}
	var buf [40]byte
	lower := buf[:0]
	for i := 0; i < len(prop); i++ {
		c := prop[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case 'a' <= c && c <= 'z', c == '-':
		default:
			return false
		}
		lower = append(lower, c)
	}
	// Stripped in turn, in the list's order, as bluemonday does; on the
	// bytes, so that no property costs a string of its own (the
	// comparison and the map index convert without a copy).
	for _, pre := range vendorPrefixes {
		if len(lower) >= len(pre) && string(lower[:len(pre)]) == pre {
			lower = lower[len(pre):]
		}
	}
	return styleProperties[string(lower)]
}

// trimImportant returns val without a trailing "!important".
func trimImportant(val string) string {
	i := strings.LastIndexByte(val, '!')
	if i < 0 || !strings.EqualFold(strings.TrimSpace(val[i+1:]), "important") {
		return val
	}
	return strings.TrimSpace(val[:i])
}

// safeStyleValue reports whether val is made only of what cleanStyle
// allows: words and numbers (letters, digits, # % . , - + _), white
// space, quoted names (letters, digits, white space, - _ ,) and colour
// functions with numbers, spaces, commas, dots, percent signs and slashes
// inside.
func safeStyleValue(val string) bool {
	if val == "" {
		return false
	}
	for i := 0; i < len(val); {
		c := val[i]
		switch {
		case isWordByte(c) || c == '#' || c == '%' || c == '.' || c == ',' || c == '+' || c == ' ' || c == '\t':
			i++
		case c == '\'' || c == '"':
			end := strings.IndexByte(val[i+1:], c)
			if end < 0 || !safeQuoted(val[i+1:i+1+end]) {
				return false
			}
			i += end + 2
		case c == '(':
			if !colorFunction(val[:i]) {
				return false
			}
			end := strings.IndexByte(val[i:], ')')
			if end < 0 || !numericArgs(val[i+1:i+end]) {
				return false
			}
			i += end + 1
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(val[i:])
			if !unicode.IsLetter(r) {
				return false
			}
			i += n
		default:
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// colorFunction reports whether before, the value up to a "(", ends with
// the name of a colour function (and nothing else of a word).
func colorFunction(before string) bool {
	i := len(before)
	for i > 0 && isWordByte(before[i-1]) {
		i--
	}
	switch strings.ToLower(before[i:]) {
	case "rgb", "rgba", "hsl", "hsla":
		return true
	}
	return false
}

// numericArgs reports whether args, the inside of a colour function, holds
// only numbers and their separators.
func numericArgs(args string) bool {
	for i := 0; i < len(args); i++ {
		c := args[i]
		if !('0' <= c && c <= '9' || c == '.' || c == ',' || c == '%' || c == ' ' || c == '/' || c == '-' || c == '+') {
			return false
		}
	}
	return true
}

// safeQuoted reports whether s, the inside of a quoted string, is a plain
// name such as a font family.
func safeQuoted(s string) bool {
	for _, r := range s {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' || r == '-' || r == '_' || r == ',') {
			return false
		}
	}
	return true
}

// legacyHook reports whether val names behavior or -moz-binding, the old
// ways of running script from CSS. Both are properties, so as values they
// do nothing; they are dropped all the same, so that no stored style holds
// them.
func legacyHook(val string) bool {
	return containsFold(val, "behavior") || containsFold(val, "binding")
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// in any case, without allocating.
func containsFold(s, sub string) bool {
	// A window of len(sub) bytes folds to sub only if it is ASCII, so
	// only a window that starts with sub's first letter in either case
	// is compared.
	first, upper := sub[0], sub[0]-('a'-'A')
	for i := 0; i+len(sub) <= len(s); i++ {
		if c := s[i]; (c == first || c == upper) && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
