package record

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"burner/storage"
)

// What Import takes of what an Exporter reads: only what a store could
// have made, in the form a store keeps it.

// CleanKey returns sk as Import stores it, its scope cleaned
// (storage.CleanScope), or an error when it is no key a store could have
// made: an invalid name (storage.ErrBadKeyName), no id, or a bad scope.
func CleanKey(sk storage.StoredKey) (storage.StoredKey, error) {
	if !storage.ValidKeyName(sk.Key.Name) || sk.Key.ID == "" {
		return storage.StoredKey{}, fmt.Errorf("key %q: %w", sk.Key.Name, storage.ErrBadKeyName)
	}
	scope, err := storage.CleanScope(sk.Key.Scope)
	if err != nil {
		return storage.StoredKey{}, fmt.Errorf("key %q: %w", sk.Key.Name, err)
	}
	sk.Key.Scope = scope
	return sk, nil
}

// CleanMessage checks m as Import stores it and returns the ids of its
// emails, or an error when it is no message a store could have made: no
// email, an id that is not one (storage.ParseID), or a recipient whose
// local part no inbox could hold (storage.StorableLocalPart). It rounds
// the emails' ReceivedAt to what a store keeps (Milli).
func CleanMessage(m *storage.StoredMessage) ([]uuid.UUID, error) {
	if len(m.Emails) == 0 {
		return nil, errors.New("a message without emails")
	}
	ids := make([]uuid.UUID, len(m.Emails))
	for i := range m.Emails {
		e := &m.Emails[i]
		id, err := storage.ParseID(e.ID)
		if err != nil {
			return nil, fmt.Errorf("email %q: %w", e.ID, err)
		}
		if !storage.StorableLocalPart(storage.LocalPart(e.To)) {
			return nil, fmt.Errorf("email %s to %q: invalid local part", e.ID, e.To)
		}
		ids[i] = id
		e.ReceivedAt = Milli(e.ReceivedAt)
	}
	return ids, nil
}

// CleanEvent returns e as Import stores it, with the id of its email, or
// an error when it is no event a store could have made: an email id that
// is not one, or a hook id that is empty or holds a NUL. Its times are
// rounded to what a store keeps (Milli), and an event with no Next is due
// at its email's receivedAt, as a new one is.
func CleanEvent(e storage.Event) (storage.Event, uuid.UUID, error) {
	id, err := storage.ParseID(e.Email.ID)
	if err != nil {
		return storage.Event{}, uuid.UUID{}, fmt.Errorf("event of email %q: %w", e.Email.ID, err)
	}
	if e.Hook == "" || strings.IndexByte(e.Hook, 0) >= 0 {
		return storage.Event{}, uuid.UUID{}, fmt.Errorf("event of email %s: unusable hook id %q", e.Email.ID, e.Hook)
	}
	e.Email.ReceivedAt = Milli(e.Email.ReceivedAt)
	if e.Next.IsZero() {
		e.Next = e.Email.ReceivedAt
	}
	e.Next = Milli(e.Next)
	return e, id, nil
}
