package boltdb

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"burner/storage"
)

// TestMaxBytes: pages that deletions freed count as room again
// (checkRoom), so that clearing a full file lets mail in.
func TestMaxBytes(t *testing.T) {
	db := openDB(t, Options{Retention: storage.Retention{MaxBytes: 256 << 10}})
	// Random bytes: stored compressed, zeros would take no room at all.
	raw := make([]byte, 32<<10)
	rand.NewChaCha8([32]byte{}).Read(raw)
	msg := &storage.Message{Raw: raw}
	var err error
	stored := 0
	for range 100 { // bounded: the cap is reached after about 8
		if _, err = db.Deliver(context.Background(), msg, []string{"fill@x.org"}); err != nil {
			break
		}
		stored++
	}
	if !errors.Is(err, storage.ErrFull) || stored == 0 {
		t.Fatalf("after %d deliveries of 32 KiB under a 256 KiB cap: err = %v, want ErrFull", stored, err)
	}
	if _, err := db.Clear(context.Background(), "fill"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Deliver(context.Background(), msg, []string{"fill@x.org"}); err != nil {
		t.Errorf("Deliver after Clear: %v, want room again", err)
	}
}

func TestDiskFree(t *testing.T) {
	free, ok := diskFree(t.TempDir())
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd":
		if !ok || free <= 0 {
			t.Errorf("diskFree(a temporary directory) = %d, %v; want a positive size", free, ok)
		}
	}
}
