package commit

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"burner/storage"
)

// Health remembers whether the last delivery to a store failed for a
// storage reason (an error wrapping storage.ErrWriteFailed) with none
// succeeding since: the state that a store's probe of one small write
// cannot see (spec §5: a commit that hit a full disk fails while a
// one-page write still fits in the free pages of a file, or in a table's
// page). Both engines keep one, fed by Deliver, and fail CheckWritable
// while it holds a fault, so that /healthz answers alike on either. The
// zero value is healthy and ready to use; it is safe for concurrent use.
type Health struct {
	mu  sync.Mutex
	err error     // the fault of the last delivery, nil after a success
	at  time.Time // when err was seen
}

// Observe records the outcome err of a delivery that ended at now, in the
// order deliveries end. A success clears a fault, an error wrapping
// storage.ErrWriteFailed sets it, and any other error leaves the state
// as it was: a canceled context or a bad address is no fault of the
// store, a store that cannot be reached, or is at its size cap, fails its
// own probe.
func (h *Health) Observe(err error, now time.Time) {
	if err != nil && !errors.Is(err, storage.ErrWriteFailed) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err, h.at = err, now
}

// Err returns an error wrapping the fault of the last delivery when it
// failed for a storage reason and no delivery has succeeded since, else
// nil.
func (h *Health) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return nil
	}
	return fmt.Errorf("the last delivery, at %s, failed and none has succeeded since: %w", h.at.UTC().Format(time.RFC3339), h.err)
}
