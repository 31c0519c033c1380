package mailauth

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/mail"
	"strings"
)

// header is what Verify reads of a message's header section itself: the
// From fields (for DMARC) and the d= and s= tags of each DKIM-Signature
// (go-msgauth's Verification has no selector).
type header struct {
	from []string    // the values of the From fields, unfolded
	sigs []signature // the DKIM-Signature fields, in header order
	// ended says a blank line ends the header section; go-msgauth cannot
	// read a message without one.
	ended bool
}

// signature is the identity a DKIM-Signature claims.
type signature struct {
	domain, selector string
}

// readHeader returns what raw's header section says, reading no further.
// Lines may end in CRLF or LF alone. It splits fields as go-msgauth does
// (every line that does not start with white space starts a field, the
// first line always does), so that its signatures and go-msgauth's
// verifications pair up one for one.
func readHeader(raw []byte) header {
	var h header
	var name, value []byte // the field being read
	started := false
	flush := func() {
		switch {
		case !started:
		case asciiEqualFold(name, "From"):
			h.from = append(h.from, strings.TrimSpace(string(value)))
		case asciiEqualFold(name, "DKIM-Signature"):
			h.sigs = append(h.sigs, parseSignature(string(value)))
		}
	}
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			h.ended = true
			break
		}
		if started && (line[0] == ' ' || line[0] == '\t') {
			value = append(value, line...) // RFC 5322 §2.2.3: unfolding removes the CRLF only
			continue
		}
		flush()
		started = true
		k, v, _ := bytes.Cut(line, []byte(":"))
		name, value = bytes.TrimSpace(k), append(value[:0], v...)
	}
	flush()
	return h
}

// asciiEqualFold reports whether b is s, ignoring ASCII case: header field
// names are ASCII and case-insensitive (RFC 5322 §1.2.2).
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// parseSignature returns the d= and s= tags of a DKIM-Signature value
// (RFC 6376 §3.2: tag=value pairs separated by semicolons, whitespace
// anywhere around them and folded within them). A malformed value gives
// what it can; verification reports the error.
func parseSignature(v string) signature {
	var s signature
	for _, pair := range strings.Split(v, ";") {
		tag, val, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		switch stripSpace(tag) {
		case "d":
			s.domain = strings.ToLower(stripSpace(val))
		case "s":
			s.selector = stripSpace(val)
		}
	}
	return s
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s)
}

// errFrom says why a message has no one From domain.
var errFrom = errors.New("no single From domain")

// addressParser reads addresses whatever the charset of their display
// names (RFC 2047 words of an unknown charset are kept as their bytes):
// DMARC needs only the domain.
var addressParser = mail.AddressParser{WordDecoder: &mime.WordDecoder{
	CharsetReader: func(_ string, r io.Reader) (io.Reader, error) { return r, nil },
}}

// fromDomain returns the domain of the author in the From field values
// (RFC 7489 §6.6.1): there must be one From field, and its addresses must
// share one domain. It reads a From that net/mail rejects (an unquoted
// comma or dot in the display name) by its last <addr-spec> or its only
// "@".
func fromDomain(values []string) (string, error) {
	if len(values) != 1 {
		return "", errFrom
	}
	var domains []string
	if list, err := addressParser.ParseList(values[0]); err == nil {
		for _, a := range list {
			domains = append(domains, domainOf(a.Address))
		}
	} else if d := looseDomain(values[0]); d != "" {
		domains = append(domains, d)
	}
	if len(domains) == 0 || domains[0] == "" {
		return "", errFrom
	}
	for _, d := range domains[1:] {
		if d != domains[0] {
			return "", errFrom
		}
	}
	return domains[0], nil
}

// domainOf returns the lower-cased domain of an address, "" without one.
func domainOf(addr string) string {
	i := strings.LastIndexByte(addr, '@')
	if i < 0 {
		return ""
	}
	d := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(addr[i+1:]), "."))
	if d == "" || strings.ContainsAny(d, " \t<>()[],;:\"\\") { // an address literal is no domain
		return ""
	}
	return d
}

// looseDomain finds the author's domain in a From value net/mail could not
// parse.
func looseDomain(v string) string {
	if i := strings.LastIndexByte(v, '<'); i >= 0 {
		if j := strings.IndexByte(v[i:], '>'); j > 0 {
			return domainOf(v[i+1 : i+j])
		}
	}
	if strings.Count(v, "@") == 1 {
		for _, w := range strings.Fields(v) {
			if strings.Contains(w, "@") {
				return domainOf(w)
			}
		}
	}
	return ""
}
