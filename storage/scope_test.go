package storage

import (
	"errors"
	"strings"
	"testing"
)

func TestParseInboxPattern(t *testing.T) {
	for in, want := range map[string]string{
		"alice": "alice", "Alice": "alice", " CI-* ": "ci-*", "*": "*", "a.b_c-d+e": "a.b_c-d+e",
		strings.Repeat("A", 64): strings.Repeat("a", 64), strings.Repeat("a", 64) + "*": strings.Repeat("a", 64) + "*",
	} {
		if got, err := ParseInboxPattern(in); err != nil || got != want {
			t.Errorf("ParseInboxPattern(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", " ", "**", "*a", "a*b", "a**", "a@b", "a b", "é", "a\x00", strings.Repeat("a", 65), strings.Repeat("a", 65) + "*"} {
		got, err := ParseInboxPattern(bad)
		if !errors.Is(err, ErrBadInboxPattern) || !strings.Contains(err.Error(), "ci-*") {
			t.Errorf("ParseInboxPattern(%q) = %q, %v; want ErrBadInboxPattern, saying what a pattern is", bad, got, err)
		}
	}
}

func TestScopeReaches(t *testing.T) {
	scoped := Scope{Inboxes: []string{"alice", "ci-*"}}
	for _, tc := range []struct {
		scope     Scope
		localPart string
		want      bool
	}{
		{Scope{}, "anyone", true},
		{Scope{ReadOnly: true}, "anyone", true},
		{Scope{Inboxes: []string{"*"}}, "anyone", true},
		{scoped, "alice", true},
		{scoped, "ALICE", true},
		{scoped, "alice+x", false}, // its own inbox (spec §4)
		{scoped, "alic", false},
		{scoped, "bob", false},
		{scoped, "ci-", true},
		{scoped, "CI-1234", true},
		{scoped, "ci", false},
		{scoped, "xci-1", false},
		{scoped, "", false},
		// ASCII folding only: the Kelvin sign is not k.
		{Scope{Inboxes: []string{"k*"}}, "\u212a1", false},
		// A metrics key reaches no inbox, whatever else it holds.
		{Scope{Metrics: true}, "anyone", false},
		{Scope{Metrics: true, Inboxes: []string{"*"}}, "anyone", false},
	} {
		if got := tc.scope.Reaches(tc.localPart); got != tc.want {
			t.Errorf("%+v.Reaches(%q) = %v, want %v", tc.scope, tc.localPart, got, tc.want)
		}
	}
}

func TestScopeEverywhere(t *testing.T) {
	for _, tc := range []struct {
		scope Scope
		want  bool
	}{
		{Scope{}, true},
		{Scope{ReadOnly: true}, true}, // metrics also asks ReadOnly, apart
		{Scope{Inboxes: []string{"*"}}, true},
		{Scope{Inboxes: []string{"alice", "*"}}, true},
		{Scope{Inboxes: []string{"a*"}}, false},
		{Scope{Inboxes: []string{"alice"}}, false},
		{Scope{Metrics: true}, false},
		{Scope{Metrics: true, ReadOnly: true, Inboxes: []string{"*"}}, false},
	} {
		if got := tc.scope.Everywhere(); got != tc.want {
			t.Errorf("%+v.Everywhere() = %v, want %v", tc.scope, got, tc.want)
		}
	}
}

func TestCleanScope(t *testing.T) {
	got, err := CleanScope(Scope{Inboxes: []string{"B", "a*", "b", " A* "}, ReadOnly: true})
	if err != nil || strings.Join(got.Inboxes, ",") != "b,a*" || !got.ReadOnly {
		t.Errorf("CleanScope = %+v, %v; want b,a* read-only", got, err)
	}
	if _, err := CleanScope(Scope{Inboxes: []string{"ok", "not ok"}}); !errors.Is(err, ErrBadInboxPattern) || !strings.Contains(err.Error(), `"not ok"`) {
		t.Errorf("CleanScope with a bad pattern: %v; want ErrBadInboxPattern naming it", err)
	}
}

// TestCleanScopeMetrics: a metrics key takes no inbox pattern, and is
// read-only whatever it asked.
func TestCleanScopeMetrics(t *testing.T) {
	for _, in := range []Scope{{Metrics: true}, {Metrics: true, ReadOnly: true}, {Metrics: true, Inboxes: []string{}}} {
		got, err := CleanScope(in)
		if err != nil || !got.Metrics || !got.ReadOnly || got.Inboxes != nil {
			t.Errorf("CleanScope(%+v) = %+v, %v; want a read-only metrics scope without patterns", in, got, err)
		}
	}
	for _, in := range []Scope{{Metrics: true, Inboxes: []string{"ci-*"}}, {Metrics: true, Inboxes: []string{"*"}}} {
		if got, err := CleanScope(in); !errors.Is(err, ErrMetricsScope) {
			t.Errorf("CleanScope(%+v) = %+v, %v; want ErrMetricsScope", in, got, err)
		}
	}
}

// TestInboxQueryMatches: a query keeps the inboxes under its prefix, in
// any case, that one of its patterns reaches, or any without patterns.
func TestInboxQueryMatches(t *testing.T) {
	for _, tc := range []struct {
		q    InboxQuery
		name string
		want bool
	}{
		{InboxQuery{}, "alice", true},
		{InboxQuery{Prefix: "PyTest-"}, "pytest-3f9a", true},
		{InboxQuery{Prefix: "pytest-"}, "alice", false},
		{InboxQuery{Patterns: []string{"ci-*", "alice"}}, "alice", true},
		{InboxQuery{Patterns: []string{"ci-*", "alice"}}, "alice-x", false},
		{InboxQuery{Patterns: []string{"ci-*", "alice"}}, "ci-7", true},
		{InboxQuery{Patterns: []string{"ci-*"}, Prefix: "ci-8"}, "ci-7", false},
		{InboxQuery{Patterns: []string{"*"}, Prefix: "b"}, "bob", true},
	} {
		if got := tc.q.Matches(tc.name); got != tc.want {
			t.Errorf("%+v.Matches(%q) = %v, want %v", tc.q, tc.name, got, tc.want)
		}
	}
}

func TestScopeReachesPattern(t *testing.T) {
	for _, tc := range []struct {
		scope   Scope
		pattern string
		want    bool
	}{
		{Scope{}, "*", true},
		{Scope{Inboxes: []string{"*"}}, "ci-*", true},
		{Scope{Inboxes: []string{"ci-*"}}, "ci-7", true},
		{Scope{Inboxes: []string{"ci-*"}}, "ci-7*", true},
		{Scope{Inboxes: []string{"ci-*"}}, "ci-*", true},
		{Scope{Inboxes: []string{"ci-*"}}, "c*", false},
		{Scope{Inboxes: []string{"ci-*"}}, "*", false},
		{Scope{Inboxes: []string{"alice"}}, "alice", true},
		{Scope{Inboxes: []string{"alice"}}, "alice*", false},
		{Scope{Inboxes: []string{"alice"}}, "bob", false},
		{Scope{Inboxes: []string{"alice", "ci-*"}, ReadOnly: true}, "ci-x", true},
		{Scope{Metrics: true}, "alice", false},
	} {
		if got := tc.scope.ReachesPattern(tc.pattern); got != tc.want {
			t.Errorf("%+v.ReachesPattern(%q) = %v, want %v", tc.scope, tc.pattern, got, tc.want)
		}
	}
}
