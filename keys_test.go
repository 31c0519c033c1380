package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"burner/storage/boltdb"
)

// TestKeysAgainstRunningServer manages keys with the CLI while serve holds
// the file: the CLI goes through the control socket and changes take effect
// at once.
func TestKeysAgainstRunningServer(t *testing.T) {
	ta := startApp(t, "")
	out, err := runCmd(t, "keys", "create", "--name", "ci", "--config", ta.config)
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if !keyRE.MatchString(key) || key != keyRE.FindString(key) {
		t.Fatalf("keys create printed %q; want the key alone on the last line", out)
	}
	if status, body := ta.get(t, key, "/api/v1/emails?to=x"); status != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("GET with the new key = %d %s, want 200 []", status, body)
	}
	out, err = runCmd(t, "keys", "list", "--config", ta.config)
	if err != nil || !strings.Contains(out, "ci") || !strings.Contains(out, "default") || strings.Contains(out, "bnr_") {
		t.Errorf("keys list = %q, %v; want both keys and no secret", out, err)
	}
	if _, err := runCmd(t, "keys", "create", "--name", "ci", "--config", ta.config); err == nil {
		t.Error("keys create with a taken name succeeded")
	}
	if out, err := runCmd(t, "keys", "revoke", "ci", "--config", ta.config); err != nil || !strings.Contains(out, "Revoked") {
		t.Fatalf("keys revoke ci = %q, %v", out, err)
	}
	if status, _ := ta.get(t, key, "/api/v1/emails?to=x"); status != 401 {
		t.Errorf("GET with the revoked key = %d, want 401 at once", status)
	}
	if _, err := runCmd(t, "keys", "revoke", "ci", "--config", ta.config); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("revoking twice: err = %v, want no key", err)
	}
}

// TestKeysWithoutServer manages keys by opening the file directly.
func TestKeysWithoutServer(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	cfg := writeConfig(t, fmt.Sprintf("data = %q\n", data))
	out, err := runCmd(t, "keys", "create", "--name", "offline", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	secret := lines[len(lines)-1]
	db, err := boltdb.Open(data, boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := db.Authenticate(context.Background(), secret); err != nil || k.Name != "offline" {
		t.Errorf("Authenticate(printed key) = %+v, %v; want key offline", k, err)
	}
	db.Close()
	if out, err := runCmd(t, "keys", "revoke", "offline", "--config", cfg); err != nil || !strings.Contains(out, "offline") {
		t.Errorf("keys revoke = %q, %v", out, err)
	}
	if out, err := runCmd(t, "keys", "list", "--config", cfg); err != nil || strings.Contains(out, "offline") {
		t.Errorf("keys list after revoke = %q, %v; want no offline key", out, err)
	}
}

// TestKeysScopedAgainstRunningServer: keys create --inbox/--read-only
// through the control socket makes a key the server limits at once, keys
// list shows its patterns and mode, and a bad pattern creates nothing.
func TestKeysScopedAgainstRunningServer(t *testing.T) {
	ta := startApp(t, "")
	out, err := runCmd(t, "keys", "create", "--name", "team", "--inbox", "Team-*", "--inbox", "alice", "--read-only", "--config", ta.config)
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if !keyRE.MatchString(key) || !strings.Contains(out, "team-*,alice") || !strings.Contains(out, "read-only") {
		t.Fatalf("keys create printed %q; want the scope, and the key alone on the last line", out)
	}
	if status, _ := ta.get(t, key, "/api/v1/emails?to=team-1"); status != 200 {
		t.Errorf("GET team-1 with the scoped key = %d, want 200", status)
	}
	if status, body := ta.get(t, key, "/api/v1/emails?to=bob"); status != 403 || !strings.Contains(string(body), "This API key may not access this inbox.") {
		t.Errorf("GET bob with the scoped key = %d %s, want 403", status, body)
	}
	if status, body := ta.do(t, "DELETE", key, "/api/v1/inbox?to=alice"); status != 403 || !strings.Contains(string(body), "This API key is read-only.") {
		t.Errorf("DELETE alice's inbox with the read-only key = %d %s, want 403", status, body)
	}
	out, err = runCmd(t, "keys", "list", "--config", ta.config)
	if err != nil || !strings.Contains(out, "INBOXES") || !strings.Contains(out, "MODE") {
		t.Fatalf("keys list = %q, %v; want the INBOXES and MODE columns", out, err)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 3 && f[1] == "team" && (f[2] != "team-*,alice" || f[3] != "read-only"):
			t.Errorf("keys list shows team as %q; want team-*,alice read-only", line)
		case len(f) > 3 && f[1] == "default" && (f[2] != "*" || f[3] != "read-write"):
			t.Errorf("keys list shows default as %q; want * read-write", line)
		}
	}
	for _, bad := range []string{"a@b", "*x", "a*b", "", strings.Repeat("a", 65) + "*"} {
		_, err := runCmd(t, "keys", "create", "--name", "bad", "--inbox", "ok", "--inbox", bad, "--config", ta.config)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--inbox %q is not a valid pattern", bad)) {
			t.Errorf("keys create --inbox %q: err = %v; want it refused, named", bad, err)
		}
	}
	if out, _ := runCmd(t, "keys", "list", "--config", ta.config); strings.Contains(out, "bad") {
		t.Errorf("keys list after refused patterns = %q; want no key bad", out)
	}
}

// TestKeysScopedWithoutServer: opening the file directly, a scoped key is
// stored with its scope, and a bad pattern does not even make the file.
func TestKeysScopedWithoutServer(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	cfg := writeConfig(t, fmt.Sprintf("data = %q\n", data))
	if _, err := runCmd(t, "keys", "create", "--name", "bad", "--inbox", "a b", "--config", cfg); err == nil {
		t.Fatal("keys create with a bad pattern succeeded")
	}
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused keys create left a data file: %v", err)
	}
	if _, err := runCmd(t, "keys", "create", "--name", "ro", "--inbox", "*", "--read-only", "--config", cfg); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, "keys", "list", "--config", cfg)
	if err != nil || !strings.Contains(out, "ro  ") || !strings.Contains(out, "read-only") {
		t.Errorf("keys list = %q, %v; want ro, read-only", out, err)
	}
	db, err := boltdb.Open(data, boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys, err := db.Keys(context.Background())
	if err != nil || len(keys) != 1 || strings.Join(keys[0].Scope.Inboxes, ",") != "*" || !keys[0].Scope.ReadOnly {
		t.Errorf("stored keys = %+v, %v; want ro with *, read-only", keys, err)
	}
}

// TestKeysMetrics: keys create --metrics (spec §14) makes, through the
// running server, a key that reads /metrics and is refused everything
// else; keys list shows its mode; --metrics with --inbox or --read-only
// is refused, naming the conflict, and creates nothing.
func TestKeysMetrics(t *testing.T) {
	ta := startApp(t, "")
	out, err := runCmd(t, "keys", "create", "--name", "prom", "--metrics", "--config", ta.config)
	if err != nil {
		t.Fatalf("keys create --metrics: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if !keyRE.MatchString(key) || !strings.Contains(out, "metrics") {
		t.Fatalf("keys create --metrics printed %q; want its mode, and the key alone on the last line", out)
	}
	if status, body := ta.get(t, key, "/metrics"); status != 200 || !strings.Contains(string(body), "burner_emails_stored") {
		t.Errorf("GET /metrics with the metrics key = %d, want 200 and the series", status)
	}
	for _, path := range []string{"/api/v1/emails?to=x", "/api/v1/info", "/api/v1/openapi.json", "/api/v1/nothing"} {
		if status, body := ta.get(t, key, path); status != 403 || strings.TrimSpace(string(body)) != `{"error":"This API key may only read metrics."}` {
			t.Errorf("GET %s with the metrics key = %d %s, want 403 This API key may only read metrics.", path, status, body)
		}
	}
	if status, body := ta.do(t, "DELETE", key, "/api/v1/inbox?to=x"); status != 403 || !strings.Contains(string(body), "may only read metrics") {
		t.Errorf("DELETE /api/v1/inbox with the metrics key = %d %s, want 403", status, body)
	}
	if status, body := ta.do(t, "POST", key, "/mcp"); status != 403 || !strings.Contains(string(body), "may only read metrics") {
		t.Errorf("POST /mcp with the metrics key = %d %s, want 403", status, body)
	}
	out, err = runCmd(t, "keys", "list", "--config", ta.config)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[1] == "prom" {
			found = true
			if f[2] != "-" || f[3] != "metrics" {
				t.Errorf("keys list shows prom as %q; want inboxes - and mode metrics", line)
			}
		}
	}
	if !found {
		t.Errorf("keys list = %q; want prom", out)
	}

	for _, args := range [][]string{{"--inbox", "ci-*"}, {"--read-only"}} {
		_, err := runCmd(t, append([]string{"keys", "create", "--name", "bad", "--metrics", "--config", ta.config}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "--metrics and "+args[0]+" cannot go together") {
			t.Errorf("keys create --metrics %v: err = %v; want the conflict named", args, err)
		}
	}
	if out, _ := runCmd(t, "keys", "list", "--config", ta.config); strings.Contains(out, "bad") {
		t.Errorf("keys list after refused --metrics keys = %q; want no key bad", out)
	}
}
