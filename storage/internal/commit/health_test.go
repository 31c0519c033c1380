package commit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"burner/storage"
)

// TestWriteHealth: a commit that failed for a storage reason holds until
// a delivery succeeds; other failures leave the state as it was.
func TestHealth(t *testing.T) {
	var h Health
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	if err := h.Err(); err != nil {
		t.Fatalf("Err of a new Health = %v, want nil", err)
	}
	fault := fmt.Errorf("deliver: %w: write burner.db: no space left on device", storage.ErrWriteFailed)
	for _, step := range []struct {
		outcome error
		failed  bool // Err after it
	}{
		{fault, true},
		{context.Canceled, true}, // the caller gave up: no news of the store
		{fmt.Errorf("deliver: %w", storage.ErrUnavailable), true}, // the store's probe sees that itself
		{fmt.Errorf("deliver: %w", storage.ErrFull), true},        // as does the room check
		{nil, false},
		{errors.New("deliver to \"a b\": invalid local part"), false},
		{fault, true},
		{nil, false},
	} {
		h.Observe(step.outcome, now)
		if err := h.Err(); (err != nil) != step.failed || err != nil && !errors.Is(err, storage.ErrWriteFailed) {
			t.Errorf("after a delivery that returned %v: Err = %v, want failed %v (wrapping storage.ErrWriteFailed)", step.outcome, err, step.failed)
		}
	}
}
