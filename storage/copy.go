package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
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
	// store keeps (what AppendSearchText gave at delivery, which
	// AppendSearchText gives back unchanged), and its Headers are the
	// fields as the store keeps them for the header filter (values may be
	// folded already: the Matcher folds them alike).
	Message Message
	// Attachments is the stored attachment index (Engine.Attachments), or
	// nil when none is stored yet.
	Attachments *Attachments
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

// Clean returns sk as Import stores it, its scope cleaned
// (CleanScope), or an error when it is no key a store could have made: an
// invalid name (ErrBadKeyName), no id, or a bad scope.
func (sk StoredKey) Clean() (StoredKey, error) {
	if !ValidKeyName(sk.Key.Name) || sk.Key.ID == "" {
		return StoredKey{}, fmt.Errorf("key %q: %w", sk.Key.Name, ErrBadKeyName)
	}
	scope, err := CleanScope(sk.Key.Scope)
	if err != nil {
		return StoredKey{}, fmt.Errorf("key %q: %w", sk.Key.Name, err)
	}
	sk.Key.Scope = scope
	return sk, nil
}

// Clean checks m as Import stores it and returns the ids of its
// emails, or an error when it is no message a store could have made: no
// email, an id that is not one (ParseID), or a recipient whose local part
// no inbox could hold (StorableLocalPart). It rounds the emails'
// ReceivedAt to what a store keeps (Milli).
func (m *StoredMessage) Clean() ([]uuid.UUID, error) {
	if len(m.Emails) == 0 {
		return nil, errors.New("a message without emails")
	}
	ids := make([]uuid.UUID, len(m.Emails))
	for i := range m.Emails {
		e := &m.Emails[i]
		id, err := ParseID(e.ID)
		if err != nil {
			return nil, fmt.Errorf("email %q: %w", e.ID, err)
		}
		if !StorableLocalPart(LocalPart(e.To)) {
			return nil, fmt.Errorf("email %s to %q: invalid local part", e.ID, e.To)
		}
		ids[i] = id
		e.ReceivedAt = Milli(e.ReceivedAt)
	}
	return ids, nil
}

// Clean returns e as Import stores it, with the id of its
// email, or an error when it is no event a store could have made: an
// email id that is not one, or a hook id that is empty or holds a NUL. Its
// times are rounded to what a store keeps (Milli), and an event with no
// Next is due at its email's receivedAt, as a new one is.
func (e Event) Clean() (Event, uuid.UUID, error) {
	id, err := ParseID(e.Email.ID)
	if err != nil {
		return Event{}, uuid.UUID{}, fmt.Errorf("event of email %q: %w", e.Email.ID, err)
	}
	if e.Hook == "" || strings.IndexByte(e.Hook, 0) >= 0 {
		return Event{}, uuid.UUID{}, fmt.Errorf("event of email %s: unusable hook id %q", e.Email.ID, e.Hook)
	}
	e.Email.ReceivedAt = Milli(e.Email.ReceivedAt)
	if e.Next.IsZero() {
		e.Next = e.Email.ReceivedAt
	}
	e.Next = Milli(e.Next)
	return e, id, nil
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
