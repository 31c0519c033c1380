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

// ValidSecret reports whether secret may be a key's: it saves a lookup
// for what is plainly not one.
func ValidSecret(secret string) bool { return strings.HasPrefix(secret, KeyPrefix) }

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
