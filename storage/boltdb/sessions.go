package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// Web UI sessions (storage.Engine), kept in the file so that a login
// outlives a restart of serve. The layout:
//
//	sessions: sha256(token) -> be64(expires unix ms), key id
//
// Only the hash of a token is stored, never the token. RevokeKey deletes
// the key's sessions in its own transaction, as PostgreSQL's ON DELETE
// CASCADE does; Session looks the key up as well, in its read
// transaction, so that a key revoked by a burner that does not know
// sessions ends them too (their records then go at their expiry).
//
// The bucket came without a new schema version: a burner that does not
// know it leaves it alone (its copy, stats and retention read named buckets;
// its check does not call an unknown bucket a problem), and its own
// revocations still end these sessions, since Session checks the key. So
// a file written before sessions were kept may lack the bucket when a
// read-only or must-exist Open finds it: every reader takes a missing
// bucket for an empty one.

var bucketSessions = []byte("sessions")

// sessionFixedLen is the part of a session record before its key id.
const sessionFixedLen = 8

func encodeSession(keyID string, expires time.Time) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, sessionFixedLen+len(keyID)), uint64(expires.UnixMilli()))
	return append(b, keyID...)
}

// decodeSession returns the key id and expiry, in unix ms, of the session
// record v, or ErrCorrupt.
func decodeSession(v []byte) (keyID string, expires int64, err error) {
	if len(v) <= sessionFixedLen {
		return "", 0, storage.ErrCorrupt
	}
	return string(v[sessionFixedLen:]), int64(binary.BigEndian.Uint64(v)), nil
}

// CreateSession stores a session for keyID until expires
// (storage.Engine); ErrNotFound when there is no key keyID. It checks
// the key in its own transaction, so a session never outlives a
// revocation that committed first.
func (db *DB) CreateSession(ctx context.Context, hash storage.SessionHash, keyID string, expires time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		if keyID == "" || tx.Bucket(bucketKeys).Get([]byte(keyID)) == nil {
			return storage.ErrNotFound
		}
		b, err := tx.CreateBucketIfNotExists(bucketSessions)
		if err != nil {
			return err
		}
		return b.Put(hash[:], encodeSession(keyID, expires))
	})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// Session returns the session of hash, or ErrNotFound when there is none,
// it expired at now or its key is gone (storage.Engine).
func (db *DB) Session(ctx context.Context, hash storage.SessionHash, now time.Time) (storage.Session, error) {
	if err := ctx.Err(); err != nil {
		return storage.Session{}, err
	}
	var s storage.Session
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		if b == nil {
			return storage.ErrNotFound
		}
		v := b.Get(hash[:])
		if v == nil {
			return storage.ErrNotFound
		}
		keyID, expires, err := decodeSession(v)
		if err != nil {
			return err
		}
		if expires <= now.UnixMilli() || tx.Bucket(bucketKeys).Get([]byte(keyID)) == nil {
			return storage.ErrNotFound
		}
		s = storage.Session{KeyID: keyID, Expires: record.FromMilli(expires)}
		return nil
	})
	if err != nil {
		return storage.Session{}, fmt.Errorf("session: %w", err)
	}
	return s, nil
}

// TouchSession moves the end of the session of hash to expires
// (storage.Engine). It never brings an end nearer, so that of two
// requests that touch one session the later end wins whatever the order
// of their commits.
func (db *DB) TouchSession(ctx context.Context, hash storage.SessionHash, expires time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		if b == nil {
			return nil
		}
		v := b.Get(hash[:])
		if v == nil {
			return nil // gone: logged out, or expired and removed
		}
		keyID, old, err := decodeSession(v)
		if err != nil {
			return err
		}
		if old >= expires.UnixMilli() {
			return nil
		}
		return b.Put(hash[:], encodeSession(keyID, expires))
	})
	if err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}

// DeleteSession ends the session of hash (storage.Engine).
func (db *DB) DeleteSession(ctx context.Context, hash storage.SessionHash) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		if b == nil {
			return nil
		}
		return b.Delete(hash[:])
	})
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions removes the sessions expired at now and returns
// how many (storage.Engine). It reads every session, which are few.
func (db *DB) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		n = 0 // the function may not run to its end
		b := tx.Bucket(bucketSessions)
		if b == nil {
			return nil
		}
		var expired [][]byte
		ms := now.UnixMilli()
		if err := b.ForEach(func(k, v []byte) error {
			_, expires, err := decodeSession(v)
			if err != nil {
				return fmt.Errorf("session %x: %w", k, err)
			}
			if expires <= ms {
				expired = append(expired, bytes.Clone(k))
			}
			return nil
		}); err != nil {
			return err
		}
		// Deleted after the walk: a cursor that deletes as it goes skips
		// the record after each one it deletes.
		for _, k := range expired {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(expired)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	return n, nil
}

// deleteKeySessions deletes the sessions of the key keyID. It reads every
// session, which are few (the logins of the last session lifetime), and
// a revocation is rare.
func deleteKeySessions(tx *bolt.Tx, keyID string) error {
	b := tx.Bucket(bucketSessions)
	if b == nil {
		return nil
	}
	var gone [][]byte
	if err := b.ForEach(func(k, v []byte) error {
		if id, _, err := decodeSession(v); err == nil && id == keyID {
			gone = append(gone, bytes.Clone(k))
		}
		return nil // a damaged record is check's to report, not the revocation's to fail on
	}); err != nil {
		return err
	}
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// checkSessions checks that every session record decodes (sessions.go
// documents the layout). A session whose key is gone is no problem: a
// burner that does not know sessions may have revoked the key, and the
// record goes at its expiry.
func checkSessions(tx *bolt.Tx, r *storage.CheckReport) {
	b := tx.Bucket(bucketSessions)
	if b == nil {
		return // a file not yet opened by a burner that keeps sessions
	}
	b.ForEach(func(k, v []byte) error {
		if len(k) != len(storage.SessionHash{}) {
			r.Problemf("session key %x is not a token hash", k)
		}
		if _, _, err := decodeSession(v); err != nil {
			r.Problemf("session %x: %v", k, err)
		}
		return nil
	})
}
