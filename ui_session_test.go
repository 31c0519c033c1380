package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestUISessionSurvivesRestart: a web UI session is kept in the bbolt
// data file, so its cookie still logs in after `serve` stops and starts
// again on the same file; `burner check` accepts the file; and revoking
// the key through the control socket ends that key's session at once,
// and no other.
func TestUISessionSurvivesRestart(t *testing.T) {
	ta := startApp(t, "")
	session := uiLogin(t, "http://"+ta.httpLn.Addr().String(), ta.key)
	out, err := runCmd(t, "keys", "create", "--name", "second", "--config", ta.config)
	second := keyRE.FindString(out)
	if err != nil || second == "" {
		t.Fatalf("burner keys create: %v\n%s", err, out)
	}
	ta.stopNow()

	ta = startAppConfig(t, ta.config, io.Discard)
	base := "http://" + ta.httpLn.Addr().String()
	if status, loc, body := uiGet(t, base, "/", session); status != http.StatusOK || !strings.Contains(body, `action="/logout"`) {
		t.Fatalf("GET / after a restart with the session made before it: %d (Location %q), want 200 and a logged-in page", status, loc)
	}
	if out, err := runCmd(t, "check", "--config", ta.config); err != nil || !strings.Contains(out, "OK:") {
		t.Errorf("burner check of a file with a session = %v\n%s", err, out)
	}

	revokee := uiLogin(t, base, second)
	if status, _, _ := uiGet(t, base, "/", revokee); status != http.StatusOK {
		t.Fatalf("GET / with the session of the key to revoke: %d, want 200", status)
	}
	if out, err := runCmd(t, "keys", "revoke", "second", "--config", ta.config); err != nil || !strings.Contains(out, "Revoked") {
		t.Fatalf("burner keys revoke: %v\n%s", err, out)
	}
	if status, loc, _ := uiGet(t, base, "/", revokee); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
		t.Errorf("GET / with the session of the revoked key: %d Location %q, want 303 to /login", status, loc)
	}
	if status, _, _ := uiGet(t, base, "/", session); status != http.StatusOK {
		t.Errorf("GET / with the session of the key that stays: %d, want 200", status)
	}
}
