package message

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message/charset"
	htmlcharset "golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// Text in the charset a header or a part names, or in none, read as
// UTF-8: for encoded words (header.go), RFC 2231 parameters (params.go)
// and the text of bodies (text.go, walk.go).

// rawToUTF8 returns s, header text outside any encoded word, as UTF-8: s
// itself when it is valid UTF-8 (RFC 6532 allows it), else read as
// Windows-1252, as browsers read undeclared 8-bit text and as toUTF8 reads
// an undeclared body.
func rawToUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out, err := charmap.Windows1252.NewDecoder().String(s)
	if err != nil {
		return validUTF8(s)
	}
	return out
}

// isASCIICharset reports whether name is one of the IANA names of
// US-ASCII, which x/text has no decoder for.
func isASCIICharset(name string) bool {
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-") {
	case "us-ascii", "ascii", "ansi-x3.4-1968", "ansi-x3.4-1986", "iso646-us", "iso-646.irv:1991",
		"us", "ibm367", "cp367", "csascii", "iso-ir-6", "646":
		return true
	}
	return false
}

// decodeCharset returns data, in the named charset, as valid UTF-8, and
// reports whether the charset is known. Text labelled US-ASCII, or not
// labelled, that holds 8-bit bytes is read by rawToUTF8; UTF-8 that is not
// valid gets U+FFFD, as in bodies (toUTF8); ISO-8859-1 is read as
// Windows-1252, as browsers read it.
func decodeCharset(data []byte, name string) (string, bool) {
	name = strings.ToLower(strings.Trim(name, " \t\"'"))
	switch {
	case name == "utf-8" || name == "utf8":
		return validUTF8(string(data)), true
	case name == "" || isASCIICharset(name):
		return rawToUTF8(string(data)), true
	case isUTF7(name):
		return decodeUTF7(data), true
	case isUTF16(name):
		return decodeUTF16(data), true
	}
	r, err := charset.Reader(name, bytes.NewReader(data))
	if err != nil {
		return "", false
	}
	// Decoders replace what they cannot map with U+FFFD and do not fail;
	// a fault in the middle keeps what came before it.
	out, _ := io.ReadAll(r)
	s := validUTF8(string(out))
	if _, html := htmlcharset.Lookup(name); html == "windows-1252" {
		s = strings.Map(c1ToWindows1252, s)
	}
	return s, true
}

// isUTF16 reports whether name is the label "UTF-16", which names no byte
// order.
func isUTF16(name string) bool {
	name = strings.ToLower(strings.Trim(name, " \t\"'"))
	return name == "utf-16" || name == "utf16"
}

// decodeUTF16 returns data, labelled UTF-16, as valid UTF-8: in the byte
// order of its BOM, else little-endian. Browsers read the label so
// (WHATWG Encoding: "utf-16" is UTF-16LE) and Windows mailers write it so;
// RFC 2781's big-endian default made their text CJK noise (the real-world
// corpus's spamassassin/spam/utf16.eml).
func decodeUTF16(data []byte) string {
	out, _ := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewDecoder().Bytes(data)
	return validUTF8(string(out))
}
