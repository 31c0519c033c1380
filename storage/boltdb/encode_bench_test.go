package boltdb_test

import (
	"testing"

	"burner/internal/benchdata"
	"burner/storage/boltdb"
)

// BenchmarkEncodeContent encodes the content and raw records of realistic
// newsletters, as each delivery does before its commit: the record's s2
// block, the cold section's zstd frame and the signature. It reports the
// bytes the two records take.
func BenchmarkEncodeContent(b *testing.B) {
	msgs, _ := benchdata.Messages(100, 1)
	b.ReportAllocs()
	size, i := 0, 0
	for b.Loop() {
		rec, raw, _ := boltdb.EncodeContent(1, msgs[i%len(msgs)])
		size += len(rec) + len(raw)
		i++
	}
	b.ReportMetric(float64(size)/float64(i), "bytes/msg")
}
