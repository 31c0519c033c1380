package match

import (
	"slices"
	"strings"
	"testing"

	"burner/storage"
)

// TestInboxPrefixes: the prefixes cover every inbox a query keeps, and
// none twice.
func TestInboxPrefixes(t *testing.T) {
	for _, tc := range []struct {
		prefix   string
		patterns []string
		want     []string
	}{
		{"", nil, []string{""}},
		{"PyTest-", nil, []string{"pytest-"}},
		{"ci-", []string{"*", "alice"}, []string{"ci-"}},
		{"", []string{"ci-*", "alice", "ci-7*", "bob*"}, []string{"alice", "bob", "ci-"}},
		{"ci-7", []string{"ci-*", "alice"}, []string{"ci-7"}},
		{"ci", []string{"ci-7*", "ci-8"}, []string{"ci-7", "ci-8"}},
		{"x", []string{"ci-*", "alice"}, nil},
		{"alice-", []string{"alice"}, nil}, // the inbox alice does not start with alice-
	} {
		q := storage.InboxQuery{Prefix: tc.prefix, Patterns: tc.patterns}
		if got := InboxPrefixes(q); !slices.Equal(got, tc.want) {
			t.Errorf("InboxPrefixes(%+v) = %q, want %q", q, got, tc.want)
		}
	}
	// Every inbox Matches keeps starts with one of the prefixes.
	names := []string{"alice", "alice-x", "bob", "ci-7", "ci-70", "ci-8", "pytest-1", "x"}
	for _, prefix := range []string{"", "a", "ci-", "ci-7", "p", "z"} {
		for _, patterns := range [][]string{nil, {"*"}, {"alice"}, {"ci-*", "alice"}, {"ci-7*"}, {"ci-7", "bob*"}} {
			q := storage.InboxQuery{Prefix: prefix, Patterns: patterns}
			prefixes := InboxPrefixes(q)
			for _, name := range names {
				n := 0
				for _, p := range prefixes {
					if strings.HasPrefix(name, p) {
						n++
					}
				}
				if q.Matches(name) && n != 1 {
					t.Errorf("%+v keeps %s, which %d of the prefixes %q cover; want 1", q, name, n, prefixes)
				}
			}
		}
	}
}
