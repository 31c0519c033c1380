package storage

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrMetricsScope means a scope asks for metrics alone and for inboxes
// too: a metrics key reaches no inbox.
var ErrMetricsScope = errors.New("storage: a metrics key reaches no inbox: give it no inbox pattern")

// ErrBadInboxPattern means an inbox pattern of a key's scope is neither a
// local part nor a prefix ending in one '*' (spec §8).
var ErrBadInboxPattern = errors.New("storage: an inbox pattern is a local part (alice) or a prefix ending in one * (ci-*; * alone is every inbox), of at most 64 of the characters A-Z a-z 0-9 _ - + . before the *")

// AllInboxes is the pattern that reaches every inbox.
const AllInboxes = "*"

// Scope is what an API key may reach and do (spec §8). The zero Scope
// reaches every inbox and may delete: it is the scope of every key made
// before scopes existed.
type Scope struct {
	// Inboxes holds the patterns of the inboxes the key reaches, each a
	// local part or a prefix ending in '*', in the form ParseInboxPattern
	// gives; none means every inbox (but for a Metrics key).
	Inboxes []string
	// ReadOnly keys may read but not delete.
	ReadOnly bool
	// Metrics makes a key for metrics alone (spec §14: it reads /metrics
	// and nothing else). It reaches no inbox, whatever Inboxes says
	// (Reaches and Everywhere are false), and changes nothing: in the
	// form CleanScope gives, it has no patterns and is ReadOnly.
	Metrics bool
}

// ParseInboxPattern returns pattern (trimmed of spaces) in canonical form,
// lower case, or an error wrapping ErrBadInboxPattern. A pattern is a
// local part (alice), a prefix ending in one '*' (ci-*), or '*' alone;
// the part before the '*' follows the rules of the API's to: the
// characters ValidLocalPart takes, at most MaxLocalPart of them.
func ParseInboxPattern(pattern string) (string, error) {
	p := strings.TrimSpace(pattern)
	if p == AllInboxes {
		return p, nil
	}
	prefix := strings.TrimSuffix(p, "*")
	if !StorableLocalPart(prefix) {
		return "", fmt.Errorf("inbox pattern %q: %w", pattern, ErrBadInboxPattern)
	}
	return InboxName(p), nil
}

// CleanScope returns s with each pattern in canonical form
// (ParseInboxPattern), in the order given, without repeats, or an error
// wrapping ErrBadInboxPattern naming the first bad pattern. A Metrics
// scope takes no pattern (ErrMetricsScope) and is made ReadOnly. Stores
// keep a key's scope in this form.
func CleanScope(s Scope) (Scope, error) {
	if s.Metrics {
		if len(s.Inboxes) > 0 {
			return Scope{}, ErrMetricsScope
		}
		return Scope{ReadOnly: true, Metrics: true}, nil
	}
	out := Scope{ReadOnly: s.ReadOnly}
	for _, p := range s.Inboxes {
		c, err := ParseInboxPattern(p)
		if err != nil {
			return Scope{}, err
		}
		if !slices.Contains(out.Inboxes, c) {
			out.Inboxes = append(out.Inboxes, c)
		}
	}
	return out, nil
}

// Reaches reports whether s reaches the inbox of localPart: whether s has
// no patterns, or one of them is localPart's inbox name or a prefix of it
// followed by '*'. Case does not matter (spec §4). A Metrics scope
// reaches none.
func (s Scope) Reaches(localPart string) bool {
	if s.Metrics {
		return false
	}
	if len(s.Inboxes) == 0 {
		return true
	}
	// ASCII folding, as InboxName: strings.EqualFold would also match the
	// Kelvin sign with k.
	name := InboxName(localPart)
	for _, p := range s.Inboxes {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if name == p {
			return true
		}
	}
	return false
}

// Everywhere reports whether s reaches every inbox: it has no patterns,
// or one of them is '*', and is no Metrics scope.
func (s Scope) Everywhere() bool {
	return !s.Metrics && (len(s.Inboxes) == 0 || slices.Contains(s.Inboxes, AllInboxes))
}

// ReachesPattern reports whether every inbox the inbox pattern p
// (ParseInboxPattern's form) takes is one s reaches: whether s reaches
// every inbox, or one of its patterns is p or a prefix pattern that
// takes all of p's inboxes ("ci-*" takes "ci-7" and "ci-7*"). A fault
// rule must be inside its key's scope (spec §13.2).
func (s Scope) ReachesPattern(p string) bool {
	if s.Everywhere() {
		return true
	}
	if s.Metrics || p == AllInboxes {
		return false
	}
	pp := InboxName(strings.TrimSuffix(p, "*"))
	for _, q := range s.Inboxes {
		if prefix, ok := strings.CutSuffix(q, "*"); ok {
			if strings.HasPrefix(pp, prefix) {
				return true
			}
		} else if q == InboxName(p) {
			return true
		}
	}
	return false
}
