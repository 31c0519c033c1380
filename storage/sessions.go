package storage

import (
	"context"
	"crypto/sha256"
	"time"
)

// SessionHash is the SHA-256 of a web UI session's token: what a store
// keeps of it, so that the store holds no usable token.
type SessionHash [sha256.Size]byte

// Session is a web UI session as a store keeps it (spec §10).
type Session struct {
	KeyID string // the API key the visitor logged in with
	// Expires is when the session ends unless a request slides it. A store
	// writes it at most once a minute per session (TouchSession's caller
	// decides), so that a page view costs no write.
	Expires time.Time
}

// Sessions is a Store that keeps web UI sessions, so that a session made
// on one node is valid on every node of one database (spec §10), and
// outlives a restart of serve. It is optional, found by type assertion as
// Outbox is: the server keeps the sessions in its memory for an engine
// without it. Both engines implement it. A session ends at its expiry, at
// logout, and at once when its key is revoked. Times are stored to the
// millisecond.
type Sessions interface {
	// CreateSession stores a session for the key keyID until expires.
	// It returns ErrNotFound when there is no key keyID (revoked).
	CreateSession(ctx context.Context, hash SessionHash, keyID string, expires time.Time) error
	// Session returns the session of hash, or ErrNotFound when there is
	// none, it expired at now, or its key has been revoked.
	Session(ctx context.Context, hash SessionHash, now time.Time) (Session, error)
	// TouchSession moves the end of the session of hash to expires, unless
	// it already ends later: of two touches the later end wins. It is not
	// an error when the session is gone.
	TouchSession(ctx context.Context, hash SessionHash, expires time.Time) error
	// DeleteSession ends the session of hash. It is not an error when the
	// session is gone.
	DeleteSession(ctx context.Context, hash SessionHash) error
	// DeleteExpiredSessions removes the sessions expired at now and
	// returns how many.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}
