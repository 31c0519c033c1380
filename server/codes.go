package server

import (
	"errors"

	"burner/codes"
)

// errBadPattern is spec §7's one answer to a pattern= that cannot be used:
// one that does not compile (codes.ErrBadPattern) and one whose matches
// would read the text too often (codes.ErrTooCostly).
var errBadPattern = badRequest("'pattern' must be a valid regular expression.")

// codesPattern returns p (the API's pattern=, MCP's pattern) compiled,
// nil when there is none (an empty one is none, as for the list's
// filters), or errBadPattern.
func codesPattern(p string) (*codes.Pattern, error) {
	if p == "" {
		return nil, nil
	}
	re, err := codes.Compile(p)
	if err != nil {
		return nil, errBadPattern
	}
	return re, nil
}

// matchCodes is p.Match with its refusal made the request's 400.
func matchCodes(p *codes.Pattern, subject *string, text string) ([]string, error) {
	found, err := p.Match(subject, text)
	if errors.Is(err, codes.ErrTooCostly) {
		return nil, errBadPattern
	}
	return found, err
}

// emailCodes is spec §7's answer for an email: p's matches, or the default
// rule's when p is nil; never nil.
func emailCodes(p *codes.Pattern, subject *string, text string) ([]string, error) {
	found := []string(nil)
	if p != nil {
		var err error
		if found, err = matchCodes(p, subject, text); err != nil {
			return nil, err
		}
	} else {
		found = codes.Find(subject, text)
	}
	if found == nil {
		found = []string{}
	}
	return found, nil
}
