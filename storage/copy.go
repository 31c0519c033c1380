package storage

import (
	"context"
	"errors"
)

// What `burner copy` carries from one store to another (spec §10): a
// store's whole content as it is stored, so that the copy answers every
// request as the original does: Engine.Export reads a store out,
// Engine.Import fills a new store from an Exporter.

// ErrNotNew means a store given as the destination of a copy already
// holds burner's data: a copy only makes new stores, and leaves others
// unchanged.
var ErrNotNew = errors.New("storage: the destination already holds a burner store")

// StoredMessage is one stored message with its emails, as a store holds
// them.
type StoredMessage struct {
	// Message is the message as stored. Its Text is the search text the
	// store keeps (made of the delivered Text, case-folded: made again
	// from itself, it stays as it is), and its Headers are the fields as
	// the store keeps them for the header filter (values may be folded
	// already: the filter folds them alike).
	Message Message
	// Attachments is the stored attachment index (Engine.Attachments), or
	// nil when none is stored yet.
	Attachments *Attachments
	// Auth is the stored authentication record (Engine.Auth), or nil when
	// none is stored.
	Auth *AuthResult
	// Emails are the message's emails that the store still holds, in
	// arrival order; one at least. Only their ID, To, ReceivedAt and Read
	// are the emails' own: their sender, subject and body are Message's.
	Emails []Email
}

// StoredKey is an API key as a store holds it: the hash of its secret,
// never the secret.
type StoredKey struct {
	Key  Key // with its Created, LastUsed and Scope
	Hash KeyHash
}

// ExportVisitor receives what Export reads. Each function may be nil, to
// skip that part.
type ExportVisitor struct {
	Key     func(StoredKey) error
	Message func(*StoredMessage) error
	// Event receives each webhook event waiting in the outbox (Outbox),
	// with its Attempts and Next.
	Event func(Event) error
}

// Exporter is the part of an Engine that reads out its whole content:
// the source of Import.
type Exporter interface {
	// Export calls v's functions for everything the store holds, from one
	// consistent view of it: every API key, then every message with its
	// emails, in the order its first email arrived, then every webhook
	// event waiting. UI sessions are not exported. It stops at the first
	// error a function returns, and returns it; and when ctx is done.
	// It writes nothing.
	Export(ctx context.Context, v ExportVisitor) error
}

// CopyCount says how much of a store a copy has carried so far.
type CopyCount struct {
	Keys, Messages, Emails, Events int
	Bytes                          int64 // the raw sources of the messages
}
