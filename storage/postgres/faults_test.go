package postgres_test

import (
	"context"
	"testing"
	"time"

	"burner/storage/postgres"
	"burner/storage/storetest"
)

// TestSweepForgetsRCPTs: the RCPTs counted for rules with PerMinute are
// rows every node reads, and Sweep deletes them once a minute old.
func TestSweepForgetsRCPTs(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := openDB(t, testDatabase(t), postgres.Options{Now: clock.Now})
	storetest.SweepForgetsRCPTs(t, db, clock, func() int {
		n, err := postgres.FaultRCPTs(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}
