//go:build !(linux || darwin || freebsd)

package boltdb

// diskFree cannot tell on this system: only the data file's cap
// (Options.Retention.MaxBytes) is checked before a delivery.
func diskFree(string) (free int64, ok bool) { return 0, false }
