package boltdb

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// TestBeforeKey: the walk of a list with before starts at the first
// millisecond not strictly before it: a fraction rounds up, and a time
// before 1970, which no email has, starts at the inbox's beginning.
func TestBeforeKey(t *testing.T) {
	prefix := inboxPrefix("alice")
	for _, tc := range []struct {
		before time.Time
		ms     uint64
	}{
		{time.UnixMilli(1_700_000_000_123), 1_700_000_000_123},
		{time.UnixMilli(1_700_000_000_123).Add(time.Nanosecond), 1_700_000_000_124},
		{time.UnixMilli(1_700_000_000_123).Add(999_999 * time.Nanosecond), 1_700_000_000_124},
		{time.Unix(0, 0), 0},
		{time.Unix(0, 1), 1},
		{time.Unix(-1, 0), 0},
		{time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), 0},
	} {
		got := beforeKey(prefix, tc.before)
		want := binary.BigEndian.AppendUint64(bytes.Clone(prefix), tc.ms)
		if !bytes.Equal(got, want) {
			t.Errorf("beforeKey(%v) = %x, want %x (ms %d)", tc.before, got, want, tc.ms)
		}
		// The emails of that millisecond are not listed; those of the one
		// before are, whatever their sequence.
		if at := emailKey(inboxName("alice"), time.UnixMilli(int64(tc.ms)), 0); bytes.Compare(at, got) < 0 {
			t.Errorf("beforeKey(%v) = %x sorts above %x, an email received at %d ms", tc.before, got, at, tc.ms)
		}
		if tc.ms > 0 {
			if prev := emailKey(inboxName("alice"), time.UnixMilli(int64(tc.ms)-1), math.MaxUint64); bytes.Compare(prev, got) >= 0 {
				t.Errorf("beforeKey(%v) = %x sorts at or below %x, an email received at %d ms", tc.before, got, prev, tc.ms-1)
			}
		}
	}
}
