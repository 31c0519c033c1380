// Package emailjson is an email as burner's API shows it (spec §3):
// exactly eight fields, in their order. The REST API answers with it,
// a webhook's data is it (spec §9), and MCP's tools give its fields: one
// package that server and webhook both use, so that the shapes cannot
// drift apart. It knows storage's Email and nothing of HTTP.
package emailjson

import (
	"math/bits"
	"strconv"
	"unicode/utf8"

	"burner/storage"
)

// TimeLayout is spec §3's receivedAt: ISO 8601, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Email is a storage.Email on the wire: spec §3's eight fields, in its
// order; a nil Subject or Body is null.
type Email struct {
	ID          string  `json:"id"`
	ToAddress   string  `json:"toAddress"`
	FromAddress string  `json:"fromAddress"`
	FromName    string  `json:"fromName"`
	Subject     *string `json:"subject"`
	Body        *string `json:"body"`
	ReceivedAt  string  `json:"receivedAt"`
	Read        bool    `json:"read"`
}

// New returns e as the API shows it.
func New(e storage.Email) Email {
	return Email{
		ID:          e.ID,
		ToAddress:   e.To,
		FromAddress: e.From,
		FromName:    e.FromName,
		Subject:     e.Subject,
		Body:        e.Body,
		ReceivedAt:  e.ReceivedAt.UTC().Format(TimeLayout),
		Read:        e.Read,
	}
}

// Append appends New(*e) as encoding/json writes it with
// SetEscapeHTML(false), without its reflection: the fields in Email's
// order. A list is the API's hottest answer, and most of its bytes are
// bodies to escape.
func Append(b []byte, e *storage.Email) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"toAddress":`...)
	b = appendString(b, e.To)
	b = append(b, `,"fromAddress":`...)
	b = appendString(b, e.From)
	b = append(b, `,"fromName":`...)
	b = appendString(b, e.FromName)
	b = append(b, `,"subject":`...)
	b = appendNullableString(b, e.Subject)
	b = append(b, `,"body":`...)
	b = appendNullableString(b, e.Body)
	b = append(b, `,"receivedAt":"`...)
	b = e.ReceivedAt.UTC().AppendFormat(b, TimeLayout)
	b = append(b, `","read":`...)
	b = strconv.AppendBool(b, e.Read)
	return append(b, '}')
}

func appendNullableString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it with SetEscapeHTML(false): quote, backslash and control
// characters (\b \f \n \r \t short), U+2028 and U+2029, and each byte of
// invalid UTF-8 as \ufffd. It skips eight plain ASCII bytes at a time,
// which is most of an HTML body between its quotes.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			special := special8(uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56)
			if special == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(special) / 8 // the bytes before it are plain
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// special8 returns, for the 8 bytes of x (the first in the low byte), a
// mask whose lowest set bit is in the first that JSON does not keep as it
// is (a control character, quote, backslash or byte above 0x7f); 0 when
// they are all plain. These are the SWAR tests of "Bit Twiddling Hacks":
// a borrow may set bits above the first special byte, never below it.
func special8(x uint64) uint64 {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	below := (x - 0x20*ones) &^ x
	quote := ((x ^ '"'*ones) - ones) &^ (x ^ '"'*ones)
	slash := ((x ^ '\\'*ones) - ones) &^ (x ^ '\\'*ones)
	return (below | quote | slash | x) & high
}
