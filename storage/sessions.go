package storage

import (
	"crypto/sha256"
	"time"
)

// SessionHash is the SHA-256 of a web UI session's token: what a store
// keeps of it, so that the store holds no usable token.
type SessionHash [sha256.Size]byte

// Session is a web UI session as a store keeps it (spec §10; Engine.Session).
type Session struct {
	KeyID string // the API key the visitor logged in with
	// Expires is when the session ends unless a request slides it. A store
	// writes it at most once a minute per session (TouchSession's caller
	// decides), so that a page view costs no write.
	Expires time.Time
}
