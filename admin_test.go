package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"burner/storage"
	"burner/storage/boltdb"
)

func TestVersion(t *testing.T) {
	out, err := runCmd(t, "version")
	if err != nil || !strings.HasPrefix(out, "burner ") {
		t.Errorf("burner version = %q, %v; want \"burner <version>\"", out, err)
	}
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
	db, err := boltdb.Open(data, boltdb.Options{})
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
		cp, err := boltdb.Open(path, boltdb.Options{})
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
		for _, want := range []string{`(?m)^emails\s+3$`, `(?m)^inboxes\s+2$`, `(?m)^keys\s+2$`, `(?m)^bytes\s+\d+ \(\d+\.\d KiB, the data file\)$`, `(?m)^oldest email\s+20\d\d-\d\d-\d\dT`, `(?m)^smtp sessions\s+3$`} {
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

// fileSum returns the sha256 of the file at path.
func fileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// burnerFile writes a data file of this burner with an email and a key,
// and returns its path, closed.
func burnerFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "burner.db")
	db, err := boltdb.Open(path, boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Deliver(context.Background(), &storage.Message{Raw: []byte("Subject: x\r\n\r\nhi\r\n")}, []string{"carol@x.test"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateKey(context.Background(), "k", storage.Scope{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// setSchema stamps the burner data file at path with schema version v,
// behind burner's back.
func setSchema(t *testing.T, path string, v byte) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{v}) }); err != nil {
		t.Fatal(err)
	}
}

// inspections are the commands that only read the data file, and keys
// revoke, which changes an existing one: none may create a file, and on a
// file they refuse none may change a byte of it. OUT is where backup
// writes.
var inspections = [][]string{
	{"check"}, {"stats"}, {"inboxes"}, {"keys", "list"}, {"backup", "OUT"}, {"backup", "-"}, {"keys", "revoke", "k"},
}

// runOn runs the command args on the data file data, with OUT replaced by
// a path in a directory of its own, and returns that path.
func runOn(t *testing.T, data string, args []string) (out string, backup string, err error) {
	t.Helper()
	backup = filepath.Join(t.TempDir(), "backup.db")
	args = slices.Clone(args)
	for i, a := range args {
		if a == "OUT" {
			args[i] = backup
		}
	}
	out, err = runCmd(t, append(args, "--data", data)...)
	return out, backup, err
}

// TestInspectionRefusesForeignFiles: on a file that is not a burner data
// file, or whose schema is older or newer than this burner's, every
// inspection command and keys revoke fails with a message that says so,
// and the file stays byte for byte as it was: nothing creates burner's
// buckets in another program's file or upgrades an old one in place.
func TestInspectionRefusesForeignFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T) string
		want string
	}{
		{"another program's bbolt file", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "other.db")
			bdb, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer bdb.Close()
			if err := bdb.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("widgets"))
				if err != nil {
					return err
				}
				return b.Put([]byte("sprocket"), []byte("42"))
			}); err != nil {
				t.Fatal(err)
			}
			return path
		}, "not a burner data file"},
		{"an empty bbolt file", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "empty.db")
			bdb, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			bdb.Close()
			return path
		}, "not a burner data file|schema version 0"}, // also what a crash inside serve's first open leaves
		{"a text file", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "notes.txt")
			if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 1000)), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}, "not a burner data file"},
		{"a file of zero bytes", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "zero.db")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}, "not a burner data file"},
		{"a newer schema", func(t *testing.T) string {
			path := burnerFile(t)
			setSchema(t, path, 99)
			return path
		}, "newer burner"},
		{"an older schema", func(t *testing.T) string {
			path := burnerFile(t)
			setSchema(t, path, 1) // the layout before compact records
			return path
		}, "older layout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.make(t)
			before := fileSum(t, data)
			for _, args := range inspections {
				out, backup, err := runOn(t, data, args)
				what := "burner " + strings.Join(args, " ")
				if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) || !strings.Contains(err.Error(), data) {
					t.Errorf("%s on %s = %v; want an error naming the file and saying %q", what, tc.name, err, tc.want)
				}
				if out != "" {
					t.Errorf("%s on %s printed %q, want nothing", what, tc.name, out)
				}
				if got := fileSum(t, data); got != before {
					t.Fatalf("%s on %s changed the file", what, tc.name)
				}
				if _, err := os.Stat(backup); err == nil {
					t.Errorf("%s on %s wrote %s", what, tc.name, backup)
				}
			}
		})
	}
}

// TestInspectionOfMissingFile: a mistyped --data is an error that says
// so, and no command but serve and keys create makes the file.
func TestInspectionOfMissingFile(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "mistyped.db")
	for _, args := range inspections {
		_, backup, err := runOn(t, data, args)
		what := "burner " + strings.Join(args, " ")
		if err == nil || !strings.Contains(err.Error(), data+": no such data file") || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s on a missing file = %v; want \"%s: no such data file\"", what, err, data)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Fatalf("%s on a missing file left %v in its directory", what, entries)
		}
		if _, err := os.Stat(backup); err == nil {
			t.Errorf("%s on a missing file wrote %s", what, backup)
		}
	}
}

// TestInspectionReadsOnly: on a sound data file the inspection commands
// answer and leave it byte for byte as it was, with no server running.
func TestInspectionReadsOnly(t *testing.T) {
	data := burnerFile(t)
	before := fileSum(t, data)
	for _, args := range inspections[:len(inspections)-1] { // not revoke, which writes
		out, backup, err := runOn(t, data, args)
		what := "burner " + strings.Join(args, " ")
		if err != nil || out == "" {
			t.Errorf("%s on a sound file = %q, %v; want an answer", what, out, err)
		}
		if got := fileSum(t, data); got != before {
			t.Fatalf("%s changed the data file", what)
		}
		if args[0] == "backup" && args[1] == "OUT" {
			cp, err := boltdb.Open(backup, boltdb.Options{ReadOnly: true})
			if err != nil {
				t.Fatalf("%s wrote a copy that does not open: %v", what, err)
			}
			st, err := cp.Stats(context.Background())
			cp.Close()
			if err != nil || st.Emails != 1 || st.Keys != 1 {
				t.Errorf("%s wrote a copy with %+v, %v; want the email and the key", what, st, err)
			}
		}
	}
	// Two readers at once: a read-only open does not lock others out.
	db, err := boltdb.Open(data, boltdb.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if out, err := runCmd(t, "stats", "--data", data); err != nil || !strings.Contains(out, "emails") {
		t.Errorf("burner stats while another reader has the file = %q, %v", out, err)
	}
}

// TestCLIChild is not a test on its own: TestExitStatus runs the test
// binary again with BURNER_CLI_ARGS set, and this becomes burner's CLI.
func TestCLIChild(t *testing.T) {
	args := os.Getenv("BURNER_CLI_ARGS")
	if args == "" {
		t.Skip("runs only as TestExitStatus's child process")
	}
	os.Args = []string{"burner"}
	if err := json.Unmarshal([]byte(args), &os.Args); err != nil {
		t.Fatal(err)
	}
	main()
	os.Exit(0)
}

// TestExitStatus: a refusal is a non-zero exit status with the reason on
// stderr, as a script sees it.
func TestExitStatus(t *testing.T) {
	if os.Getenv("BURNER_CLI_ARGS") != "" {
		t.Skip("child process")
	}
	data := filepath.Join(t.TempDir(), "other.db")
	if err := os.WriteFile(data, []byte(strings.Repeat("x", 8192)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "--data", data}, {"stats", "--data", data + ".missing"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCLIChild$", "-test.count=1")
		argv, _ := json.Marshal(append([]string{"burner"}, args...))
		cmd.Env = append(os.Environ(), "BURNER_CLI_ARGS="+string(argv))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(stderr.String(), "burner: ") || !strings.Contains(stderr.String(), data) {
			t.Errorf("burner %s: %v, stderr %q; want exit status 1 and the reason", strings.Join(args, " "), err, stderr.String())
		}
	}
}
