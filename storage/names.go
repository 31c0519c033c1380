package storage

import (
	"strings"

	"github.com/google/uuid"
)

// MaxLocalPart is the longest local part burner accepts.
// RFC 5321 §4.5.3.1.1: a local part is at most 64 octets.
const MaxLocalPart = 64

// LocalPart returns the part of an address before its last '@' (all of it
// when it has none): the inbox the address belongs to.
func LocalPart(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[:i]
	}
	return addr
}

// StorableLocalPart reports whether mail may be stored for the local part
// s: ValidLocalPart, and at most MaxLocalPart long. Delivery, import and
// inbox patterns take only these.
func StorableLocalPart(s string) bool {
	return len(s) <= MaxLocalPart && ValidLocalPart(s)
}

// ValidLocalPart reports whether s is a local part the API can address:
// one or more of A-Z a-z 0-9 and _ - + . (length is checked separately,
// against MaxLocalPart, because the API names that error apart).
func ValidLocalPart(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_' || c == '-' || c == '+' || c == '.':
		default:
			return false
		}
	}
	return true
}

// InboxName returns the name of the inbox of localPart: lower(localPart).
// Local parts are ASCII (ValidLocalPart), so ASCII lower-casing is the
// whole of case-insensitivity (spec §4: Alice and alice are one inbox).
func InboxName(localPart string) string {
	return string(AppendInboxName(make([]byte, 0, len(localPart)), localPart))
}

// AppendInboxName appends InboxName(localPart) to dst.
func AppendInboxName(dst []byte, localPart string) []byte {
	for i := 0; i < len(localPart); i++ {
		c := localPart[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// ParseID parses an email id, or returns ErrNotFound. Only the canonical
// 36-character form names an email (spec §3); uuid.Parse would also take
// urn:uuid:, braces and bare hex.
func ParseID(id string) (uuid.UUID, error) {
	if len(id) != 36 {
		return uuid.UUID{}, ErrNotFound
	}
	uid, err := uuid.Parse(id)
	if err != nil {
		return uuid.UUID{}, ErrNotFound
	}
	return uid, nil
}
