package storage

import (
	"context"
	"time"
)

// Hook is a webhook as a store knows it: what it is called and which
// inboxes it covers (spec §9). A store that keeps an outbox writes one
// Event per email of an inbox the hook's Scope reaches, in the commit of
// the email itself.
type Hook struct {
	// ID names the hook in the outbox; it is stable across restarts, so
	// that events written before one are still the hook's after it. It
	// holds no 0x00 byte.
	ID string
	// Scope gives the inboxes the hook covers (patterns in the form
	// ParseInboxPattern gives; none: every inbox). ReadOnly has no say.
	Scope Scope
}

// Covers reports whether h wants the emails of the inbox of localPart.
func (h Hook) Covers(localPart string) bool { return h.Scope.Reaches(localPart) }

// Event is one email to be sent to one hook: the email as it was stored,
// so that it is sent even after the email is deleted (spec §9).
type Event struct {
	Hook  string // Hook.ID
	Email Email  // as it was stored; Read is false
	// Attempts counts the attempts made so far. The worker sets it before
	// RetryEvent, which stores it.
	Attempts int
	// Next is when the event is due: its email's receivedAt until a first
	// failure, then the time RetryEvent stored.
	Next time.Time
}

// Claim asks ClaimEvents for the due events of one hook.
type Claim struct {
	Hook string
	// Node names who claims them: with several nodes on one store (spec
	// §10), each event is leased to one node at a time.
	Node  string
	Now   time.Time     // an event is due when its Next is not after Now
	Lease time.Duration // how long the events are the Node's alone, from Now
	Max   int           // at most this many events
}

// HookWaiting is what an outbox holds for one hook.
type HookWaiting struct {
	Hook   string
	Events int       // events not yet sent nor dropped
	Oldest time.Time // the receivedAt of the oldest of them
}

// Outbox is the part of an Engine that keeps webhook events durably
// (spec §9), all that the delivery worker needs: the store writes them in
// the same commit as their emails, from the hooks it was opened with, and
// hands them to the worker. Events of a hook the store no longer knows
// stay until DropEvents removes them.
type Outbox interface {
	// ClaimEvents returns at most c.Max events of hook c.Hook that are due
	// at c.Now and not leased, in no promised order, and leases them to
	// c.Node until c.Now+c.Lease: until then, or until CompleteEvent or
	// RetryEvent, no ClaimEvents returns them again. A crash or a lost
	// lease makes an event due again: delivery is at least once.
	ClaimEvents(ctx context.Context, c Claim) ([]Event, error)
	// CompleteEvent removes e from the outbox: it was delivered, or given
	// up. It is not an error when e is gone already.
	CompleteEvent(ctx context.Context, e Event) error
	// RetryEvent stores e.Attempts and makes e due again at next, and
	// ends its lease. It is not an error when e is gone already.
	RetryEvent(ctx context.Context, e Event, next time.Time) error
	// RenewLease extends to until the lease that a ClaimEvents of this
	// store gave e, while the store still holds it: not once e is settled,
	// nor once its lease has ended and passed to another claim. So a
	// worker keeps a short lease on an event whose request is in flight
	// (spec §9). It is not an error when e is gone or no longer leased.
	RenewLease(ctx context.Context, e Event, until time.Time) error
	// ReclaimLeases ends every lease that a claim with Claim.Node node
	// made through another opening of the store (an earlier run of the
	// same node, which ended without settling its events, as after a
	// kill -9), so that their events are due at once, and returns how many
	// it ended. The leases of this opening stay. A node calls it once as
	// it starts (spec §9: a node takes back its own earlier leases).
	ReclaimLeases(ctx context.Context, node string) (int, error)
	// DropEvents removes every event whose email was received before
	// before, and returns how many it removed, by hook.
	DropEvents(ctx context.Context, before time.Time) (map[string]int, error)
	// Waiting reports, for each hook with events in the outbox (known to
	// the store or not), how many wait and the oldest, by hook id.
	Waiting(ctx context.Context) ([]HookWaiting, error)
	// EventsAdded returns a channel that is closed once an event for hook
	// has been committed after the call, so that the first attempt starts
	// at once rather than at the next poll. A worker takes the channel
	// first and then claims, so that no event slips between.
	EventsAdded(hook string) <-chan struct{}
}
