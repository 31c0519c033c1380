package match_test

import (
	"bytes"
	"testing"

	"burner/internal/benchdata"
	"burner/storage/internal/match"
)

// TestAppendSearchTextOfMail holds AppendSearchText to the plain scan on
// the text of realistic newsletters, whose plain part repeats the text of
// the HTML wrapped at 72 columns.
func TestAppendSearchTextOfMail(t *testing.T) {
	msgs, _ := benchdata.Messages(200, 1)
	for _, m := range msgs {
		got, want := match.AppendSearchText(nil, m.Text), match.AppendSearchTextScan(nil, m.Text)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendSearchText(%.80q…) = %q, the scan gives %q", m.Text, got, want)
		}
		if len(got) >= len(m.Text)*3/4 {
			t.Errorf("search text of %d bytes from a text of %d: the plain part's lines were not dropped", len(got), len(m.Text))
		}
	}
}
