package match_test

import (
	"testing"

	"burner/internal/benchdata"
	"burner/storage/internal/match"
)

// BenchmarkEmailSignature measures what a signature adds to a delivery:
// the search text of a newsletter (made once per message anyway) to its
// signature, for each of 100 messages.
func BenchmarkEmailSignature(b *testing.B) {
	msgs, _ := benchdata.Messages(100, 1)
	texts := make([][]byte, len(msgs))
	size := 0
	for i, m := range msgs {
		texts[i] = match.AppendSearchText(nil, m.Text)
		size += len(match.EmailSignature(texts[i], m.Subject, m.FromName, m.From))
	}
	i := 0
	for b.Loop() {
		m := msgs[i%len(msgs)]
		match.EmailSignature(texts[i%len(msgs)], m.Subject, m.FromName, m.From)
		i++
	}
	b.ReportMetric(float64(size)/float64(len(msgs)), "sig-bytes")
}
