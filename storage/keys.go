package storage

import (
	"crypto/sha256"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// KeyPrefix starts every API key, so that a leaked key is recognizable.
const KeyPrefix = "bnr_"

// ErrKeyExists means a key with that name already exists; names are unique so
// that a key can be revoked by name.
var ErrKeyExists = errors.New("storage: a key with that name already exists")

// ErrBadKeyName means a key name is empty, too long or holds control
// characters: names are typed on command lines and printed in tables.
var ErrBadKeyName = errors.New("storage: a key name is 1 to 64 printable characters")

// ErrBadSecret means a secret given for a new key is not one burner could
// have made: KeyPrefix followed by at least MinSecretChars base64url
// characters (spec §14), so that it is as hard to guess as a made one.
var ErrBadSecret = errors.New("storage: a key's secret is bnr_ followed by at least 43 base64url characters (A-Z a-z 0-9 - _)")

// MinSecretChars is how many base64url characters a secret holds at
// least after KeyPrefix: 43 carry 32 bytes, what a secret burner makes
// carries.
const MinSecretChars = 43

// maxKeyName bounds a key name, in characters.
const maxKeyName = 64

// Key describes an API key. The secret itself is never stored.
type Key struct {
	ID       string
	Name     string
	Created  time.Time
	LastUsed time.Time // zero when never used
	Scope    Scope     // what the key may reach and do (spec §8)
}

// KeyHash is what a store keeps of a key's secret. A secret carries 32
// random bytes, so one SHA-256 is enough; a slow password hash would tax
// every request.
type KeyHash [sha256.Size]byte

// ValidSecret reports whether secret may be a key's: KeyPrefix followed
// by at least MinSecretChars characters of base64url (RFC 4648 §5, no
// padding). Every secret burner makes is one, and a key made from a
// given secret (Engine.CreateKeyWithSecret) must be one, so no key has a
// secret that fails it.
func ValidSecret(secret string) bool {
	rest, ok := strings.CutPrefix(secret, KeyPrefix)
	if !ok || len(rest) < MinSecretChars {
		return false
	}
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// ValidKeyName reports whether name may name a key: 1 to 64 printable
// characters.
func ValidKeyName(name string) bool {
	if name == "" || utf8.RuneCountInString(name) > maxKeyName || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
