package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// The key layout:
//
//	keys:      key id -> uvarint-prefixed name, be64(created unix ms), be64(last used unix ms, 0 = never), sha256(secret)
//	keyhashes: sha256(secret) -> key id
//
// Only the hash of a secret is stored. A secret carries 32 random bytes, so
// one SHA-256 is enough; a slow password hash would tax every request.

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
}

// CreateKey makes a new API key called name and returns it with its secret,
// which is shown to the user once and never again. It returns ErrKeyExists
// when the name is taken.
func (db *DB) CreateKey(ctx context.Context, name string) (Key, string, error) {
	if err := ctx.Err(); err != nil {
		return Key{}, "", err
	}
	name = strings.TrimSpace(name)
	if !validKeyName(name) {
		return Key{}, "", fmt.Errorf("create key %q: %w", name, ErrBadKeyName)
	}
	var buf [32 + 6]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return Key{}, "", fmt.Errorf("create key: %w", err)
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(buf[:32])
	k := Key{ID: hex.EncodeToString(buf[32:]), Name: name, Created: db.now().UTC().Truncate(time.Millisecond)}
	hash := sha256.Sum256([]byte(secret))
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketKeys)
		if _, _, err := findKey(keys, name); err == nil {
			return ErrKeyExists
		}
		if err := keys.Put([]byte(k.ID), encodeKey(k, hash[:])); err != nil {
			return err
		}
		return tx.Bucket(bucketKeyHashes).Put(hash[:], []byte(k.ID))
	})
	if err != nil {
		return Key{}, "", fmt.Errorf("create key %q: %w", name, err)
	}
	return k, secret, nil
}

// Keys returns every API key, oldest first (then by name).
func (db *DB) Keys(ctx context.Context) ([]Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Key
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketKeys).ForEach(func(id, v []byte) error {
			k, _, err := decodeKey(id, v)
			if err != nil {
				return err
			}
			out = append(out, k)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	db.usageMu.Lock()
	for i := range out {
		if t, ok := db.usage[out[i].ID]; ok {
			out[i].LastUsed = t
		}
	}
	db.usageMu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Key returns the key with id, or ErrNotFound (also once it is revoked).
func (db *DB) Key(ctx context.Context, id string) (Key, error) {
	if err := ctx.Err(); err != nil {
		return Key{}, err
	}
	var k Key
	err := db.bolt.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketKeys).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		var err error
		k, _, err = decodeKey([]byte(id), v)
		return err
	})
	if err != nil {
		return Key{}, fmt.Errorf("key %q: %w", id, err)
	}
	return k, nil
}

// RevokeKey deletes the key whose id, or else whose name, is idOrName, and
// returns it; ErrNotFound when there is none. The key stops working at once.
func (db *DB) RevokeKey(ctx context.Context, idOrName string) (Key, error) {
	if err := ctx.Err(); err != nil {
		return Key{}, err
	}
	var k Key
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketKeys)
		var (
			hash []byte
			err  error
		)
		if v := keys.Get([]byte(idOrName)); v != nil {
			k, hash, err = decodeKey([]byte(idOrName), v)
		} else {
			k, hash, err = findKey(keys, idOrName)
		}
		if err != nil {
			return err
		}
		if err := keys.Delete([]byte(k.ID)); err != nil {
			return err
		}
		return tx.Bucket(bucketKeyHashes).Delete(hash)
	})
	if err != nil {
		return Key{}, fmt.Errorf("revoke key %q: %w", idOrName, err)
	}
	db.usageMu.Lock()
	if t, ok := db.usage[k.ID]; ok {
		k.LastUsed = t
		delete(db.usage, k.ID)
	}
	db.usageMu.Unlock()
	return k, nil
}

func validKeyName(name string) bool {
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

// Authenticate returns the key whose secret is secret, or ErrNotFound, and
// notes the use in memory: a request never costs a write (SPEC §1).
func (db *DB) Authenticate(ctx context.Context, secret string) (Key, error) {
	if err := ctx.Err(); err != nil {
		return Key{}, err
	}
	if !strings.HasPrefix(secret, KeyPrefix) {
		return Key{}, ErrNotFound
	}
	hash := sha256.Sum256([]byte(secret))
	var k Key
	err := db.bolt.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketKeyHashes).Get(hash[:])
		if id == nil {
			return ErrNotFound
		}
		v := tx.Bucket(bucketKeys).Get(id)
		if v == nil {
			return errCorrupt
		}
		var err error
		k, _, err = decodeKey(id, v)
		return err
	})
	if err != nil {
		return Key{}, fmt.Errorf("authenticate: %w", err)
	}
	k.LastUsed = db.now().UTC().Truncate(time.Millisecond)
	db.usageMu.Lock()
	db.usage[k.ID] = k.LastUsed
	db.usageMu.Unlock()
	return k, nil
}

// flushUsage writes the "last used" times noted since the last flush. On
// failure it keeps them for the next try.
func (db *DB) flushUsage() error {
	db.usageMu.Lock()
	pending := db.usage
	db.usage = make(map[string]time.Time)
	db.usageMu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketKeys)
		for id, t := range pending {
			v := keys.Get([]byte(id))
			if v == nil {
				continue // revoked since
			}
			k, hash, err := decodeKey([]byte(id), v)
			if err != nil {
				return err
			}
			k.LastUsed = t
			if err := keys.Put([]byte(id), encodeKey(k, hash)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.usageMu.Lock()
		for id, t := range pending {
			if _, newer := db.usage[id]; !newer {
				db.usage[id] = t
			}
		}
		db.usageMu.Unlock()
		return fmt.Errorf("flush key usage: %w", err)
	}
	return nil
}

// findKey returns the key named name and its hash, or ErrNotFound.
func findKey(keys *bolt.Bucket, name string) (Key, []byte, error) {
	c := keys.Cursor()
	for id, v := c.First(); id != nil; id, v = c.Next() {
		k, hash, err := decodeKey(id, v)
		if err != nil {
			return Key{}, nil, err
		}
		if k.Name == name {
			return k, hash, nil
		}
	}
	return Key{}, nil, ErrNotFound
}

func encodeKey(k Key, hash []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(k.Name)))
	b = append(b, k.Name...)
	b = binary.BigEndian.AppendUint64(b, uint64(k.Created.UnixMilli()))
	var last int64
	if !k.LastUsed.IsZero() {
		last = k.LastUsed.UnixMilli()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(last))
	return append(b, hash...)
}

func decodeKey(id, v []byte) (Key, []byte, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n+16+sha256.Size {
		return Key{}, nil, errCorrupt
	}
	k := Key{ID: string(id), Name: string(v[w : w+int(n)])}
	rest := v[w+int(n):]
	k.Created = time.UnixMilli(int64(binary.BigEndian.Uint64(rest))).UTC()
	if last := int64(binary.BigEndian.Uint64(rest[8:])); last != 0 {
		k.LastUsed = time.UnixMilli(last).UTC()
	}
	return k, bytes.Clone(rest[16 : 16+sha256.Size]), nil
}
