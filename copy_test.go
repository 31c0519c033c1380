package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"burner/storage"
)

// copyPaths are the API requests whose answers a copy must give byte for
// byte alike, for the emails with ids.
func copyPaths(ids []string) []string {
	paths := []string{
		"/api/v1/emails?to=alice", "/api/v1/emails?to=ALICE&limit=1", "/api/v1/emails?to=bob",
		"/api/v1/emails?to=alice&search=stra%C3%9Fe", "/api/v1/emails?to=alice&subject=second",
		"/api/v1/emails?to=ci-7",
	}
	for _, id := range ids {
		for _, p := range []string{"", "/raw", "/text", "/links", "/codes", "/attachments"} {
			paths = append(paths, "/api/v1/emails/"+id+p)
		}
	}
	return paths
}

// TestCopyCommand: `burner copy` refuses a file that a serve holds, makes
// a new file that answers every request as the original does (ids, read
// flags, receivedAt, raw sources, keys), and refuses a DST that exists.
func TestCopyCommand(t *testing.T) {
	ta := startApp(t, "")
	smtpAddr := ta.smtpLn.Addr().String()
	for _, m := range []struct {
		to  []string
		msg string
	}{
		{[]string{"alice@inbox.test", "ci-7@inbox.test"}, "From: Shop <shop@x.test>\r\nSubject: Your code\r\n\r\nStraße: your code is 424242.\r\nhttps://x.test/confirm?t=1\r\n"},
		{[]string{"alice@inbox.test", "bob@inbox.test"}, "Subject: second\r\nContent-Type: text/html\r\n\r\n<p>second <a href=\"https://y.test/\">link</a></p>\r\n"},
		{[]string{"alice@inbox.test"}, "Subject: =?utf-8?q?third_=E2=9C=93?=\r\n\r\nbinary \xff\r\n"},
	} {
		if err := sendMail(t, smtpAddr, "s@x.test", m.to, m.msg); err != nil {
			t.Fatalf("SendMail: %v", err)
		}
	}
	var ids []string
	for _, in := range []string{"alice", "bob", "ci-7"} {
		for _, s := range ta.listIDs(t, ta.key, in) {
			ids = append(ids, strings.Fields(s)[0])
		}
	}
	ctx := context.Background()
	if err := ta.db.MarkRead(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	_, scoped, err := ta.db.CreateKey(ctx, "ci", storage.Scope{Inboxes: []string{"ci-*"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(t.TempDir(), "copy.db")
	if _, err := runCmd(t, "copy", "--from", ta.data, "--to", dst); err == nil || !strings.Contains(err.Error(), "burner backup") {
		t.Errorf("copy from a file that serve holds: %v, want a refusal naming burner backup", err)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("a refused copy made %s", dst)
	}
	ta.stopNow()

	out, err := runCmd(t, "copy", "--from", ta.data, "--to", dst)
	if err != nil {
		t.Fatalf("copy: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Copied 2 keys, 5 emails (3 messages,") {
		t.Errorf("copy printed %q, want the counts: 2 keys, 5 emails of 3 messages", out)
	}

	// The same requests to the original and to the copy, with the same keys.
	orig := startAppConfig(t, ta.config, io.Discard)
	cfgCopy := writeConfig(t, fmt.Sprintf("data = %q\n[smtp]\nlisten = \"127.0.0.1:0\"\n[http]\nlisten = \"127.0.0.1:0\"\n", dst))
	cp := startAppConfig(t, cfgCopy, io.Discard)
	if cp.key != "" {
		t.Errorf("serve on the copy made a first key: the copied keys are missing")
	}
	for _, key := range []string{ta.key, scoped} {
		for _, p := range copyPaths(ids) {
			s1, b1 := orig.get(t, key, p)
			s2, b2 := cp.get(t, key, p)
			if s1 != s2 || !bytes.Equal(b1, b2) {
				t.Errorf("GET %s: the original answers %d %s\nthe copy %d %s", p, s1, b1, s2, b2)
			}
		}
	}
	// The read flag shows in the web UI only: the engine's test checks it.
	cp.stopNow()
	orig.stopNow()

	// A DST that exists is refused, unchanged.
	before, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "copy", "--from", ta.data, "--to", dst); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("copy to an existing file: %v, want a refusal", err)
	}
	if after, _ := os.ReadFile(dst); !bytes.Equal(before, after) {
		t.Errorf("a refused copy changed %s", dst)
	}
}

// A PostgreSQL store cannot be backed up by burner: backup exits non-zero,
// writes nothing and names pg_dump (spec §10). No database is needed: the
// refusal comes before any connection.
func TestBackupOfPostgresNamesPgDump(t *testing.T) {
	out := filepath.Join(t.TempDir(), "backup.db")
	_, err := runCmd(t, "backup", out, "--data", "postgres://burner:s3cret@db.invalid/burner")
	if err == nil || !strings.Contains(err.Error(), "pg_dump") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("backup of a postgres:// store: %v; want an error naming pg_dump, without the password", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("backup of a postgres:// store wrote %s", out)
	}
}

func TestIsPostgres(t *testing.T) {
	for data, want := range map[string]bool{
		"burner.db": false, "/var/lib/burner/burner.db": false, "postgres://h/db": true,
		"postgresql://u@h/db?sslmode=require": true, "POSTGRES://h/db": true, "postgres:/relative": false,
		"./postgres://x": false,
	} {
		if got := isPostgres(data); got != want {
			t.Errorf("isPostgres(%q) = %v, want %v", data, got, want)
		}
	}
}
