package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"burner/internal/pgtest"
	"burner/server"
	"burner/storage"
	"burner/storage/boltdb"
)

// testDatabase returns the URL of a new, empty database (pgtest.Database).
func testDatabase(t *testing.T) string {
	t.Helper()
	return pgtest.Database(t)
}

// schemaExists reports whether the database at url holds burner's schema
// table, asking it directly.
func schemaExists(ctx context.Context, url string) (bool, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var exists bool
	err = conn.QueryRow(ctx, `SELECT to_regclass('burner_schema') IS NOT NULL`).Scan(&exists)
	return exists, err
}

// spec §10: the commands work on a PostgreSQL store, directly; inspection
// never creates one.
func TestCommandsOnPostgres(t *testing.T) {
	db := testDatabase(t)
	ctx := context.Background()
	if _, err := runCmd(t, "stats", "--data", db); err == nil || !strings.Contains(err.Error(), "holds no burner store") {
		t.Errorf("stats on an empty database: %v, want a refusal", err)
	}
	if exists, err := schemaExists(ctx, db); err != nil || exists {
		t.Fatalf("after stats on an empty database, burner's schema exists: %v, %v; inspection must create nothing", exists, err)
	}
	out, err := runCmd(t, "keys", "create", "--name", "ci", "--inbox", "ci-*", "--data", db)
	if err != nil || !keyRE.MatchString(out) {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	if out, err := runCmd(t, "keys", "list", "--data", db); err != nil || !strings.Contains(out, "ci-*") {
		t.Errorf("keys list: %v\n%s", err, out)
	}
	if out, err := runCmd(t, "stats", "--data", db); err != nil || !strings.Contains(out, "the database") || !strings.Contains(out, "keys            1") {
		t.Errorf("stats: %v\n%s", err, out)
	}
	if out, err := runCmd(t, "check", "--data", db); err != nil || !strings.Contains(out, "OK") || !strings.Contains(out, "keys      1") {
		t.Errorf("check: %v\n%s", err, out)
	}
	if out, err := runCmd(t, "inboxes", "--data", db); err != nil || !strings.HasPrefix(out, "INBOX") {
		t.Errorf("inboxes: %v\n%s", err, out)
	}
	if out, err := runCmd(t, "keys", "revoke", "ci", "--data", db); err != nil || !strings.Contains(out, "Revoked") {
		t.Errorf("keys revoke: %v\n%s", err, out)
	}
	dst := filepath.Join(t.TempDir(), "b.db")
	if _, err := runCmd(t, "backup", dst, "--data", db); err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("backup of a database: %v, want a refusal naming pg_dump", err)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("backup of a database wrote %s", dst)
	}
}

// TestCopyThroughPostgres copies a bbolt file into a new database and
// back into a new file, and asks all three the same: the same answers,
// byte for byte (spec §10).
func TestCopyThroughPostgres(t *testing.T) {
	db := testDatabase(t)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src.db")
	b, err := boltdb.Open(src, boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := b.CreateKey(ctx, "all", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	body := "<p>Straße 424242</p>"
	var ids []string
	for i, to := range [][]string{{"alice@x.test", "bob@x.test"}, {"alice@x.test"}, {"ci-1@x.test", "alice@x.test"}} {
		es, err := b.Deliver(ctx, &storage.Message{From: "s@x.test", Subject: new(fmt.Sprint("n", i)), Body: &body,
			Text: "Straße 424242", Plain: "Straße 424242", Headers: []storage.Header{{Name: "X-Run", Value: fmt.Sprint("R", i)}},
			Raw: []byte(fmt.Sprintf("Subject: n%d\r\nX-Run: R%d\r\n\r\nStra\xc3\x9fe 424242 \x00\xff\r\n", i, i))}, to)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			ids = append(ids, e.ID)
		}
	}
	if err := b.MarkRead(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	b.Close()

	back := filepath.Join(t.TempDir(), "back.db")
	for _, c := range [][2]string{{src, db}, {db, back}} {
		if out, err := runCmd(t, "copy", "--from", c[0], "--to", c[1]); err != nil || !strings.Contains(out, "Copied 1 keys, 5 emails (3 messages,") {
			t.Fatalf("copy --from %s --to %s: %v\n%s", c[0], c[1], err, out)
		}
	}
	if _, err := runCmd(t, "copy", "--from", src, "--to", db); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("copy into a database that holds burner's tables: %v, want a refusal", err)
	}

	paths := []string{"/api/v1/emails?to=alice", "/api/v1/emails?to=bob", "/api/v1/emails?to=alice&search=strasse",
		"/api/v1/emails?to=alice&header=X-Run:r1", "/api/v1/emails?to=alice&limit=1"}
	for _, id := range ids {
		paths = append(paths, "/api/v1/emails/"+id, "/api/v1/emails/"+id+"/raw", "/api/v1/emails/"+id+"/text", "/api/v1/emails/"+id+"/codes")
	}
	answers := func(data string) []string {
		st, err := openData(ctx, Config{Data: data}, readOnly, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		h := server.New(st, server.Options{}, nil).Handler()
		var out []string
		for _, p := range paths {
			req := httptest.NewRequest(http.MethodGet, p, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			body, _ := io.ReadAll(w.Result().Body)
			out = append(out, fmt.Sprintf("%s: %d %s", p, w.Code, body))
		}
		return out
	}
	want := answers(src)
	for _, data := range []string{db, back} {
		got := answers(data)
		for i := range want {
			if !bytes.Equal([]byte(got[i]), []byte(want[i])) {
				t.Errorf("%s answers\n%s\nwant, as the original,\n%s", showData(data), got[i], want[i])
			}
		}
	}
}
