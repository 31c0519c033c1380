package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	bolt "go.etcd.io/bbolt"

	"burner/storage"
)

// listIDs returns the ids of the emails of inbox, newest first, through
// the API.
func (ta *testApp) listIDs(t *testing.T, key, inbox string) []string {
	t.Helper()
	status, body := ta.get(t, key, "/api/v1/emails?to="+inbox)
	var es []struct{ ID, Subject string }
	if status != 200 || json.Unmarshal(body, &es) != nil {
		t.Fatalf("GET %s's inbox = %d %s", inbox, status, body)
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID + " " + e.Subject
	}
	return ids
}

// stopNow stops burner in the middle of a test; the cleanup's stop then
// finds it stopped.
func (ta *testApp) stopNow() {
	ta.stop()
	ta.done <- nil
}

// TestBackupRestore takes a hot backup through the control socket while
// burner serves, then restores it as docs/deploy.md says (stop, copy the
// file back, start) and lists the same mail.
func TestBackupRestore(t *testing.T) {
	ta := startApp(t, "")
	smtpAddr := ta.smtpLn.Addr().String()
	for i, to := range []string{"alice@inbox.test", "alice@inbox.test", "bob@inbox.test"} {
		if err := sendMail(t, smtpAddr, "a@sender.test", []string{to}, fmt.Sprintf("Subject: m%d\r\n\r\nhi\r\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob := ta.listIDs(t, ta.key, "alice"), ta.listIDs(t, ta.key, "bob")

	backup := filepath.Join(t.TempDir(), "backup.db")
	out, err := runCmd(t, "backup", backup, "--config", ta.config)
	if err != nil || !strings.Contains(out, "Wrote a copy of") {
		t.Fatalf("burner backup = %q, %v", out, err)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the backup file: %v, %v; want mode 0600 (it holds mail and key hashes)", fi, err)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(backup), ".*tmp*")); len(matches) > 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
	// Mail after the backup, and a deletion: the restore forgets both.
	sendMail(t, smtpAddr, "a@sender.test", []string{"alice@inbox.test"}, "Subject: late\r\n\r\nhi\r\n")
	ta.do(t, "DELETE", ta.key, "/api/v1/emails/"+strings.Fields(bob[0])[0])

	// Restore: stop, copy the file back, start.
	ta.stopNow()
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ta.data, b, 0o600); err != nil {
		t.Fatal(err)
	}
	again := startAppConfig(t, ta.config, io.Discard)
	if again.key != "" {
		t.Error("the restored file had no key: burner created a new one")
	}
	if got := again.listIDs(t, ta.key, "alice"); !slices.Equal(got, alice) {
		t.Errorf("after the restore alice has %v, want %v", got, alice)
	}
	if got := again.listIDs(t, ta.key, "bob"); !slices.Equal(got, bob) {
		t.Errorf("after the restore bob has %v, want %v", got, bob)
	}
}

// TestBackupOffline: without a server, backup reads the file itself;
// "-" writes to stdout; the data file itself and a missing data file are
// refused.
func TestBackupOffline(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Deliver(context.Background(), &storage.Message{Raw: []byte("Subject: x\r\n\r\n")}, []string{"carol@x.test"})
	db.Close()
	cfg := writeConfig(t, fmt.Sprintf("data = %q\n", data))

	backup := filepath.Join(t.TempDir(), "b.db")
	if _, err := runCmd(t, "backup", backup, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	stdout, err := runCmd(t, "backup", "-", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"file": backup, "stdout": filepath.Join(t.TempDir(), "out.db")} {
		if name == "stdout" {
			os.WriteFile(path, []byte(stdout), 0o600)
		}
		cp, err := storage.Open(path, storage.Options{})
		if err != nil {
			t.Fatalf("open the backup to %s: %v", name, err)
		}
		es, err := cp.List(context.Background(), storage.Query{LocalPart: "carol"})
		cp.Close()
		if err != nil || len(es) != 1 {
			t.Errorf("the backup to %s lists %d emails for carol (%v), want 1", name, len(es), err)
		}
	}
	if _, err := runCmd(t, "backup", data, "--config", cfg); err == nil || !strings.Contains(err.Error(), "data file itself") {
		t.Errorf("backup onto the data file: %v, want a refusal", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.db")
	for _, args := range [][]string{{"backup", backup}, {"stats"}, {"inboxes"}, {"check"}} {
		if _, err := runCmd(t, append(args, "--data", missing)...); err == nil {
			t.Errorf("burner %s on a missing data file succeeded", args[0])
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a command on a missing data file created it")
	}
}

// TestStatsInboxesCheck runs the administration commands through the
// control socket of a running server, and on the file once it stops.
func TestStatsInboxesCheck(t *testing.T) {
	ta := startApp(t, "")
	for _, to := range []string{"alice@inbox.test", "Alice@inbox.test", "bob@inbox.test"} {
		if err := sendMail(t, ta.smtpLn.Addr().String(), "a@sender.test", []string{to}, "Subject: s\r\n\r\nhi\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	runCmd(t, "keys", "create", "--name", "second", "--config", ta.config)
	check := func(how string) {
		out, err := runCmd(t, "stats", "--config", ta.config)
		for _, want := range []string{`(?m)^emails\s+3$`, `(?m)^inboxes\s+2$`, `(?m)^keys\s+2$`, `(?m)^bytes\s+\d+ \(\d+\.\d KiB, the data file\)$`, `(?m)^oldest email\s+20\d\d-\d\d-\d\dT`} {
			if err != nil || !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("%s: burner stats = %v\n%s\nwant %s", how, err, out, want)
			}
		}
		out, err = runCmd(t, "inboxes", "--config", ta.config)
		if err != nil || !regexp.MustCompile(`(?m)^INBOX\s+EMAILS\s+NEWEST\nalice\s+2\s+20\d\d-.*Z\nbob\s+1\s+20\d\d-.*Z\n$`).MatchString(out) {
			t.Errorf("%s: burner inboxes = %v\n%s", how, err, out)
		}
		out, err = runCmd(t, "check", "--config", ta.config)
		if err != nil || !strings.Contains(out, "OK:") || !regexp.MustCompile(`(?m)^emails\s+3$`).MatchString(out) || !regexp.MustCompile(`schema version \d+, `).MatchString(out) {
			t.Errorf("%s: burner check = %v\n%s", how, err, out)
		}
	}
	check("running server")
	ta.stopNow()
	check("file")

	// Break an index behind burner's back: check says so and fails.
	bdb, err := bolt.Open(ta.data, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("inboxes")).Put([]byte("bob"), binary.BigEndian.AppendUint64(nil, 5))
	})
	bdb.Close()
	out, err := runCmd(t, "check", "--config", ta.config)
	if err == nil || !strings.Contains(err.Error(), "1 problem(s) found") || !strings.Contains(out, `problem: inbox "bob" counts 5 emails`) {
		t.Errorf("burner check on a damaged file = %v\n%s", err, out)
	}
}

// TestStartRefusesNewerFile: a file written by a newer burner is refused
// at start, with both versions named.
func TestStartRefusesNewerFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	bdb, err := bolt.Open(data, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	bdb.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket([]byte("meta"))
		return b.Put([]byte("schema"), []byte{99})
	})
	bdb.Close()
	cfg := defaultConfig()
	cfg.Data = data
	cfg.SMTP.Listen, cfg.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
	_, err = start(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "schema version 99") || !strings.Contains(err.Error(), "reads versions up to ") || !strings.Contains(err.Error(), "newer burner") {
		t.Errorf("start on a file from a newer burner: %v", err)
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_burner", "zsh": "#compdef burner", "fish": "complete -c burner"} {
		out, err := runCmd(t, "completion", shell)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("burner completion %s: %v, output lacks %q", shell, err, want)
		}
	}
}

// TestHelp: every flag of every command says what it does, and --help
// shows the defaults.
func TestHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" {
			t.Errorf("%q has no short description", c.CommandPath())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if len(f.Usage) < 15 {
				t.Errorf("%s --%s: usage %q says too little", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())

	out, err := runCmd(t, "serve", "--help")
	for _, want := range []string{
		`--data FILE`, `(default "burner.db")`, `--http ADDR`, `(default "127.0.0.1:8080")`,
		`--smtp ADDR`, `(default "127.0.0.1:2525")`, `--domain DOMAIN`, `--config FILE`, "SIGHUP",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("burner serve --help lacks %q:\n%s", want, out)
		}
	}
	out, _ = runCmd(t, "--help")
	for _, cmd := range []string{"serve", "keys", "backup", "check", "stats", "inboxes", "completion", "version"} {
		if !regexp.MustCompile(`(?m)^  ` + cmd + ` `).MatchString(out) {
			t.Errorf("burner --help does not list %s:\n%s", cmd, out)
		}
	}
}
