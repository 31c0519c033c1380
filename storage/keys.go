package storage

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// NewKey makes a new API key called name (trimmed of spaces) with scope,
// created at now, and returns it with its secret and the hash of the
// secret, which is all a store keeps of it. The key's scope is scope in
// the form CleanScope gives it. It returns ErrBadKeyName for a name that
// fails ValidKeyName, and an error wrapping ErrBadInboxPattern for a bad
// pattern.
func NewKey(name string, scope Scope, now time.Time) (Key, string, KeyHash, error) {
	name = strings.TrimSpace(name)
	if !ValidKeyName(name) {
		return Key{}, "", KeyHash{}, fmt.Errorf("create key %q: %w", name, ErrBadKeyName)
	}
	scope, err := CleanScope(scope)
	if err != nil {
		return Key{}, "", KeyHash{}, fmt.Errorf("create key %q: %w", name, err)
	}
	var buf [32 + 6]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return Key{}, "", KeyHash{}, fmt.Errorf("create key: %w", err)
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(buf[:32])
	k := Key{ID: hex.EncodeToString(buf[32:]), Name: name, Created: Milli(now), Scope: scope}
	return k, secret, HashSecret(secret), nil
}

// HashSecret returns the hash under which a store finds the key of secret.
func HashSecret(secret string) KeyHash { return sha256.Sum256([]byte(secret)) }

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

// KeyUsage holds the "last used" times of keys noted in memory and not yet
// written: a request never costs a write (spec §1), so an engine notes
// each use here and writes them now and then. Its zero value is ready to
// use, and it is safe for concurrent use.
//
// A time only ever replaces an earlier one, in memory as on the way to
// the store: a clock stepped back, or a node whose clock is behind
// another's, does not make a key look used less recently than it was.
type KeyUsage struct {
	mu sync.Mutex
	t  map[string]time.Time // key id -> last use not yet written
}

// Note notes a use of the key id at t, unless a later one is noted.
func (u *KeyUsage) Note(id string, t time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.note(id, t)
}

func (u *KeyUsage) note(id string, t time.Time) {
	if old, ok := u.t[id]; ok && !t.After(old) {
		return
	}
	if u.t == nil {
		u.t = make(map[string]time.Time)
	}
	u.t[id] = t
}

// Apply sets k.LastUsed to the use noted of k, when it is later.
func (u *KeyUsage) Apply(k *Key) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t, ok := u.t[k.ID]; ok && t.After(k.LastUsed) {
		k.LastUsed = t
	}
}

// Forget applies the use noted of k (Apply) and forgets it: the key is
// gone.
func (u *KeyUsage) Forget(k *Key) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t, ok := u.t[k.ID]; ok && t.After(k.LastUsed) {
		k.LastUsed = t
	}
	delete(u.t, k.ID)
}

// Take returns the uses noted and forgets them, for the caller to write;
// nil when there are none. A caller that fails to write them gives them
// back with Restore.
func (u *KeyUsage) Take() map[string]time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.t
	u.t = nil
	if len(t) == 0 {
		return nil
	}
	return t
}

// Restore notes again the uses of a Take that were not written, each
// unless a later one was noted since.
func (u *KeyUsage) Restore(pending map[string]time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, t := range pending {
		u.note(id, t)
	}
}
