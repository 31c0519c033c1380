package boltdb

import bolt "go.etcd.io/bbolt"

// What the external tests (package storage_test, which may import
// internal/benchdata: an internal test cannot, as benchdata imports
// storage) share with the internal ones.
var (
	RoundTrip     = roundTrip
	OpenTestDB    = openDB
	EncodeContent = encodeContent
)

// DataBytes returns the bytes of data in db's file: its size less its
// free pages, as checkRoom counts them.
func DataBytes(db *DB) int64 {
	var size int64
	db.bolt.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	return size - int64(db.bolt.Stats().FreeAlloc)
}

// PagesWritten returns how many pages db's commits have written.
func PagesWritten(db *DB) int64 { st := db.bolt.Stats(); return st.TxStats.GetWrite() }
