// Package keyring is what both engines do alike with API keys: make one
// and hash its secret (a store keeps the hash alone), and hold the uses of
// keys in memory until the engine writes them (spec §1: a request never
// costs a write).
package keyring

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"burner/storage"
	"burner/storage/internal/record"
)

// New makes a new API key called name (trimmed of spaces) with scope,
// created at now, and returns it with its secret and the hash of the
// secret, which is all a store keeps of it. The key's scope is scope in
// the form storage.CleanScope gives it. It returns storage.ErrBadKeyName
// for a name that fails storage.ValidKeyName, and an error wrapping
// storage.ErrBadInboxPattern (or storage.ErrMetricsScope) for a bad
// scope.
func New(name string, scope storage.Scope, now time.Time) (storage.Key, string, storage.KeyHash, error) {
	var buf [32]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return storage.Key{}, "", storage.KeyHash{}, fmt.Errorf("create key: %w", err)
	}
	secret := storage.KeyPrefix + base64.RawURLEncoding.EncodeToString(buf[:])
	k, hash, err := WithSecret(name, scope, secret, now)
	return k, secret, hash, err
}

// WithSecret makes a new API key called name with scope, created at now,
// whose secret is secret, and returns it with the hash of the secret: as
// New does, and storage.ErrBadSecret for a secret that fails
// storage.ValidSecret.
func WithSecret(name string, scope storage.Scope, secret string, now time.Time) (storage.Key, storage.KeyHash, error) {
	name = strings.TrimSpace(name)
	if !storage.ValidKeyName(name) {
		return storage.Key{}, storage.KeyHash{}, fmt.Errorf("create key %q: %w", name, storage.ErrBadKeyName)
	}
	if !storage.ValidSecret(secret) {
		return storage.Key{}, storage.KeyHash{}, fmt.Errorf("create key %q: %w", name, storage.ErrBadSecret)
	}
	scope, err := storage.CleanScope(scope)
	if err != nil {
		return storage.Key{}, storage.KeyHash{}, fmt.Errorf("create key %q: %w", name, err)
	}
	var id [6]byte
	if _, err := rand.Read(id[:]); err != nil {
		return storage.Key{}, storage.KeyHash{}, fmt.Errorf("create key: %w", err)
	}
	k := storage.Key{ID: hex.EncodeToString(id[:]), Name: name, Created: record.Milli(now), Scope: scope}
	return k, Hash(secret), nil
}

// Plausible reports whether secret is worth a lookup: it starts with
// storage.KeyPrefix. Every key's secret passes storage.ValidSecret, so a
// lookup of one that does not finds nothing; the check is kept this loose
// so that what a lookup answers (a key, none, or a store out of reach)
// is the same for any token that looks like a key.
func Plausible(secret string) bool { return strings.HasPrefix(secret, storage.KeyPrefix) }

// Hash returns the hash under which a store finds the key of secret.
func Hash(secret string) storage.KeyHash { return sha256.Sum256([]byte(secret)) }

// Usage holds the "last used" times of keys noted in memory and not yet
// written: a request never costs a write (spec §1), so an engine notes
// each use here and writes them now and then. Its zero value is ready to
// use, and it is safe for concurrent use.
//
// A time only ever replaces an earlier one, in memory as on the way to
// the store: a clock stepped back, or a node whose clock is behind
// another's, does not make a key look used less recently than it was.
type Usage struct {
	mu sync.Mutex
	t  map[string]time.Time // key id -> last use not yet written
}

// Note notes a use of the key id at t, unless a later one is noted.
func (u *Usage) Note(id string, t time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.note(id, t)
}

func (u *Usage) note(id string, t time.Time) {
	if old, ok := u.t[id]; ok && !t.After(old) {
		return
	}
	if u.t == nil {
		u.t = make(map[string]time.Time)
	}
	u.t[id] = t
}

// Apply sets k.LastUsed to the use noted of k, when it is later.
func (u *Usage) Apply(k *storage.Key) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t, ok := u.t[k.ID]; ok && t.After(k.LastUsed) {
		k.LastUsed = t
	}
}

// Forget applies the use noted of k (Apply) and forgets it: the key is
// gone.
func (u *Usage) Forget(k *storage.Key) {
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
func (u *Usage) Take() map[string]time.Time {
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
func (u *Usage) Restore(pending map[string]time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, t := range pending {
		u.note(id, t)
	}
}
