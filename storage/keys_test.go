package storage

import (
	"strings"
	"testing"
)

// TestValidSecret: spec §14's form of a secret: bnr_ and at least 43
// base64url characters (32 bytes), without padding.
func TestValidSecret(t *testing.T) {
	a43 := strings.Repeat("a", MinSecretChars)
	for s, want := range map[string]bool{
		KeyPrefix + a43:                            true,
		KeyPrefix + strings.Repeat("Az09-_", 8):    true,
		KeyPrefix + a43 + strings.Repeat("b", 100): true,
		KeyPrefix + a43[1:]:                        false,
		"":                                         false,
		KeyPrefix:                                  false,
		a43 + "aaaa":                               false,
		"BNR_" + a43:                               false,
		KeyPrefix + a43 + "=":                      false,
		KeyPrefix + a43[1:] + "+":                  false,
		KeyPrefix + a43[1:] + "/":                  false,
		KeyPrefix + a43 + " ":                      false,
		KeyPrefix + a43 + "\x00":                   false,
		KeyPrefix + strings.Repeat("é", 43):        false,
	} {
		if got := ValidSecret(s); got != want {
			t.Errorf("ValidSecret(%q) = %v, want %v", s, got, want)
		}
	}
}
