package record

import "github.com/google/uuid"

// NewID returns the id of a new email: a UUID of version 7 (RFC 9562:
// unix milliseconds, then 74 random bits; spec §3 allows it). Ids made in
// one process only grow, so an index of them grows at its end rather than
// touching a random page for every email.
func NewID() uuid.UUID { return uuid.Must(uuid.NewV7()) }
