package boltdb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"

	"burner/storage"
	"burner/storage/internal/keyring"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// The key layout:
//
//	keys:      key id -> uvarint-prefixed name, be64(created unix ms), be64(last used unix ms, 0 = never), sha256(secret), [scope]
//	keyhashes: sha256(secret) -> key id
//
// scope (schema version 4 on) is a version byte, 1, then a flags byte
// (bit 0: read-only; bit 1, from schema version 8: metrics alone), a
// uvarint count of inbox patterns and each pattern uvarint-prefixed, in
// storage.CleanScope's form (a metrics key has no pattern and is
// read-only). A record without it was
// made before scopes: its key reaches every inbox and may delete, as the
// zero storage.Scope says. Only the hash of a secret is stored
// (keyring.Hash).

// CreateKey makes a new API key called name with scope and returns it with
// its secret, which is shown to the user once and never again. It returns
// ErrKeyExists when the name is taken.
func (db *DB) CreateKey(ctx context.Context, name string, scope storage.Scope) (storage.Key, string, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, "", err
	}
	k, secret, hash, err := keyring.New(name, scope, db.now())
	if err != nil {
		return storage.Key{}, "", err
	}
	if err := db.putKey(k, hash); err != nil {
		return storage.Key{}, "", err
	}
	return k, secret, nil
}

// CreateKeyWithSecret makes a new API key called name with scope whose
// secret is secret (storage.ValidSecret, or ErrBadSecret). It returns
// ErrKeyExists when the name is taken or a key has that secret.
func (db *DB) CreateKeyWithSecret(ctx context.Context, name string, scope storage.Scope, secret string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	k, hash, err := keyring.WithSecret(name, scope, secret, db.now())
	if err != nil {
		return storage.Key{}, err
	}
	if err := db.putKey(k, hash); err != nil {
		return storage.Key{}, err
	}
	return k, nil
}

// putKey stores the new key k whose secret hashes to hash, or returns
// ErrKeyExists when its name is taken or a key has that hash.
func (db *DB) putKey(k storage.Key, hash storage.KeyHash) error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		keys, hashes := tx.Bucket(bucketKeys), tx.Bucket(bucketKeyHashes)
		if _, _, err := findKey(keys, k.Name); err == nil {
			return storage.ErrKeyExists
		}
		if hashes.Get(hash[:]) != nil {
			return storage.ErrKeyExists
		}
		if err := keys.Put([]byte(k.ID), encodeKey(k, hash[:])); err != nil {
			return err
		}
		return hashes.Put(hash[:], []byte(k.ID))
	})
	if err != nil {
		return fmt.Errorf("create key %q: %w", k.Name, err)
	}
	return nil
}

// Keys returns every API key, oldest first (then by name).
func (db *DB) Keys(ctx context.Context) ([]storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []storage.Key
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
	for i := range out {
		db.usage.Apply(&out[i])
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Key returns the key with id, or ErrNotFound (also once it is revoked).
func (db *DB) Key(ctx context.Context, id string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	var k storage.Key
	err := db.bolt.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketKeys).Get([]byte(id))
		if v == nil {
			return storage.ErrNotFound
		}
		var err error
		k, _, err = decodeKey([]byte(id), v)
		return err
	})
	if err != nil {
		return storage.Key{}, fmt.Errorf("key %q: %w", id, err)
	}
	db.usage.Apply(&k) // a use not yet written, as Keys shows it
	return k, nil
}

// RevokeKey deletes the key whose id, or else whose name, is idOrName, and
// returns it; ErrNotFound when there is none. The key stops working at
// once, and its UI sessions go in the same transaction (sessions.go).
func (db *DB) RevokeKey(ctx context.Context, idOrName string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	var k storage.Key
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
		if err := deleteKeySessions(tx, k.ID); err != nil {
			return err
		}
		return tx.Bucket(bucketKeyHashes).Delete(hash)
	})
	if err != nil {
		return storage.Key{}, fmt.Errorf("revoke key %q: %w", idOrName, err)
	}
	db.usage.Forget(&k)
	return k, nil
}

// Authenticate returns the key whose secret is secret, or ErrNotFound, and
// notes the use in memory: a request never costs a write (spec §1).
func (db *DB) Authenticate(ctx context.Context, secret string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	k, err := db.keyBySecret(secret)
	if err != nil {
		return storage.Key{}, fmt.Errorf("authenticate: %w", err)
	}
	k.LastUsed = record.Milli(db.now())
	db.usage.Note(k.ID, k.LastUsed)
	return k, nil
}

// KeyBySecret returns the key whose secret is secret, or ErrNotFound, as
// Authenticate does but without noting a use.
func (db *DB) KeyBySecret(ctx context.Context, secret string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	k, err := db.keyBySecret(secret)
	if err != nil {
		return storage.Key{}, fmt.Errorf("key by secret: %w", err)
	}
	db.usage.Apply(&k)
	return k, nil
}

// keyBySecret returns the key whose secret is secret as the file holds
// it, or ErrNotFound.
func (db *DB) keyBySecret(secret string) (storage.Key, error) {
	if !keyring.Plausible(secret) {
		return storage.Key{}, storage.ErrNotFound
	}
	hash := keyring.Hash(secret)
	var k storage.Key
	err := db.bolt.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketKeyHashes).Get(hash[:])
		if id == nil {
			return storage.ErrNotFound
		}
		v := tx.Bucket(bucketKeys).Get(id)
		if v == nil {
			return storage.ErrCorrupt
		}
		var err error
		k, _, err = decodeKey(id, v)
		return err
	})
	return k, err
}

// flushUsage writes the "last used" times noted since the last flush,
// each unless the file holds a later one. On failure it keeps them for the
// next try.
func (db *DB) flushUsage() error {
	pending := db.usage.Take()
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
			if !t.After(k.LastUsed) {
				continue
			}
			k.LastUsed = t
			if err := keys.Put([]byte(id), encodeKey(k, hash)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.usage.Restore(pending)
		return fmt.Errorf("flush key usage: %w", err)
	}
	return nil
}

// findKey returns the key named name and its hash, or ErrNotFound.
func findKey(keys *bolt.Bucket, name string) (storage.Key, []byte, error) {
	c := keys.Cursor()
	for id, v := c.First(); id != nil; id, v = c.Next() {
		k, hash, err := decodeKey(id, v)
		if err != nil {
			return storage.Key{}, nil, err
		}
		if k.Name == name {
			return k, hash, nil
		}
	}
	return storage.Key{}, nil, storage.ErrNotFound
}

// scopeVersion starts the scope section of a key record.
const scopeVersion = 1

// The flag bits of a scope: a read-only key, a key for metrics alone.
const (
	scopeReadOnly = 1 << 0
	scopeMetrics  = 1 << 1
)

func encodeKey(k storage.Key, hash []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(k.Name)))
	b = append(b, k.Name...)
	b = binary.BigEndian.AppendUint64(b, uint64(k.Created.UnixMilli()))
	var last int64
	if !k.LastUsed.IsZero() {
		last = k.LastUsed.UnixMilli()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(last))
	b = append(b, hash...)
	var flags byte
	if k.Scope.ReadOnly {
		flags |= scopeReadOnly
	}
	if k.Scope.Metrics {
		flags |= scopeMetrics
	}
	b = append(b, scopeVersion, flags)
	b = binary.AppendUvarint(b, uint64(len(k.Scope.Inboxes)))
	for _, p := range k.Scope.Inboxes {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

func decodeKey(id, v []byte) (storage.Key, []byte, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n+16+sha256.Size {
		return storage.Key{}, nil, storage.ErrCorrupt
	}
	k := storage.Key{ID: string(id), Name: string(v[w : w+int(n)])}
	rest := v[w+int(n):]
	k.Created = record.FromMilli(int64(binary.BigEndian.Uint64(rest)))
	if last := int64(binary.BigEndian.Uint64(rest[8:])); last != 0 {
		k.LastUsed = record.FromMilli(last)
	}
	hash := bytes.Clone(rest[16 : 16+sha256.Size])
	scope, err := decodeScope(rest[16+sha256.Size:])
	if err != nil {
		return storage.Key{}, nil, err
	}
	k.Scope = scope
	return k, hash, nil
}

// decodeScope decodes the scope section of a key record: none is the zero
// scope of a key made before scopes. A scope not in storage.CleanScope's
// form (a pattern not canonical, a metrics key with patterns or that may
// delete) is corruption: reading it as something else could widen the
// key.
func decodeScope(b []byte) (storage.Scope, error) {
	if len(b) == 0 {
		return storage.Scope{}, nil
	}
	if len(b) < 3 || b[0] != scopeVersion || b[1]&^(scopeReadOnly|scopeMetrics) != 0 {
		return storage.Scope{}, storage.ErrCorrupt
	}
	s := storage.Scope{ReadOnly: b[1]&scopeReadOnly != 0, Metrics: b[1]&scopeMetrics != 0}
	if s.Metrics && (!s.ReadOnly || b[2] != 0) {
		return storage.Scope{}, storage.ErrCorrupt
	}
	count, w := binary.Uvarint(b[2:])
	if w <= 0 || count > uint64(len(b)) {
		return storage.Scope{}, storage.ErrCorrupt
	}
	b = b[2+w:]
	for range count {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return storage.Scope{}, storage.ErrCorrupt
		}
		p := string(b[w : w+int(n)])
		if c, err := storage.ParseInboxPattern(p); err != nil || c != p {
			return storage.Scope{}, storage.ErrCorrupt
		}
		s.Inboxes = append(s.Inboxes, p)
		b = b[w+int(n):]
	}
	if len(b) != 0 {
		return storage.Scope{}, storage.ErrCorrupt
	}
	return s, nil
}
