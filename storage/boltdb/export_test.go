package boltdb

// What the external tests (package storage_test, which may import
// internal/benchdata: an internal test cannot, as benchdata imports
// storage) share with the internal ones.
var (
	RoundTrip     = roundTrip
	OpenTestDB    = openDB
	EncodeContent = encodeContent
)
