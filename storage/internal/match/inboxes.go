package match

import (
	"slices"
	"strings"

	"burner/storage"
)

// InboxPrefixes returns the name prefixes an engine walks to find every
// inbox q keeps (storage.InboxQuery.Matches, which decides): none when no
// inbox can match, and no prefix of another, so that walks of them never
// meet an inbox twice. A pattern's prefix is the part before its '*', or
// the whole name of a pattern without one (which finds more than that
// inbox; Matches drops the others).
func InboxPrefixes(q storage.InboxQuery) []string {
	prefix := storage.InboxName(q.Prefix)
	if len(q.Patterns) == 0 || slices.Contains(q.Patterns, storage.AllInboxes) {
		return []string{prefix}
	}
	var out []string
	for _, p := range q.Patterns {
		base, star := strings.CutSuffix(p, "*")
		switch {
		case strings.HasPrefix(base, prefix):
			out = append(out, base)
		case star && strings.HasPrefix(prefix, base):
			out = append(out, prefix)
		}
		// Else the pattern and the prefix have no inbox in common.
	}
	// Sorted, a prefix comes before the names it covers.
	slices.Sort(out)
	kept := out[:0]
	for _, p := range out {
		if len(kept) == 0 || !strings.HasPrefix(p, kept[len(kept)-1]) {
			kept = append(kept, p)
		}
	}
	return kept
}
