package postgres_test

import (
	"context"
	"strings"
	"testing"

	"burner/storage/postgres"
	"burner/storage/storetest"

	"github.com/jackc/pgx/v5"
)

// TestCheck: a sound database is reported sound, with its counts; each
// kind of damage done to its rows is reported, and Check changes nothing.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	cfg := storetest.CopyConfig()
	src := openDB(t, testDatabase(t), postgres.Options{Now: cfg.Now, Hooks: cfg.Hooks})
	storetest.FillCopySource(t, src, cfg)
	r, err := src.Check(ctx)
	if err != nil || !r.OK() {
		t.Fatalf("Check of a sound database: %+v, %v", r, err)
	}
	if r.Emails != 6 || r.Messages != 3 || r.Inboxes != 3 || r.Keys != 3 || r.FileBytes == 0 || r.SchemaVersion == 0 {
		t.Errorf("Check counted %+v; want 6 emails, 3 messages, 3 inboxes, 3 keys, a size and a version", r)
	}
	// A copy into a new database is sound, and read-only Check works.
	dbURL := testDatabase(t)
	dst := openDB(t, dbURL, postgres.Options{MustBeNew: true})
	if _, err := dst.Import(ctx, src, nil); err != nil {
		t.Fatal(err)
	}
	ro := openDB(t, dbURL, postgres.Options{ReadOnly: true})
	if r, err := ro.Check(ctx); err != nil || !r.OK() || r.Emails != 6 {
		t.Errorf("read-only Check of a copy: %+v, %v", r, err)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var alice, bob, first string
	if err := conn.QueryRow(ctx, `SELECT
		(SELECT message::text FROM emails WHERE inbox = 'alice' ORDER BY seq LIMIT 1),
		(SELECT id::text FROM emails WHERE inbox = 'bob'),
		(SELECT id::text FROM emails ORDER BY seq LIMIT 1)`).Scan(&alice, &bob, &first); err != nil {
		t.Fatal(err)
	}
	for _, damage := range []string{
		`UPDATE bodies SET attachments = '\x01' WHERE id = '` + alice + `'`,
		`DELETE FROM messages WHERE id = (SELECT message FROM emails WHERE id = '` + bob + `')`,
		`UPDATE emails SET inbox = 'carol' WHERE id = '` + first + `'`,
		`UPDATE emails SET received_at = (SELECT min(received_at) FROM emails WHERE inbox = 'alice') WHERE inbox = 'alice'`,
		`DELETE FROM event_messages WHERE id IN (SELECT message FROM events WHERE hook = 'ci')`,
		`UPDATE keys SET hash = '\x00' WHERE name = 'ci'`,
		`UPDATE emails SET sig = '\x0000000000000000' WHERE message = '` + alice + `'`,
	} {
		if _, err := conn.Exec(ctx, damage); err != nil {
			t.Fatalf("%s: %v", damage, err)
		}
	}
	r, err = ro.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(r.Problems, "\n")
	for _, want := range []string{
		"the attachment index does not decode",
		"email " + bob + ": its message",
		"email " + first + `: it is in inbox "carol"`,
		`inbox "alice": `,
		"hook ci: its message is missing",
		"a hash of 1 bytes",
		"has a signature that is not its text's",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Check of a damaged database reported\n%s\nwithout %q", got, want)
		}
	}
	if r.OK() || r.Emails != 6 {
		t.Errorf("Check of a damaged database: %+v", r)
	}
	if r2, err := ro.Check(ctx); err != nil || len(r2.Problems) != len(r.Problems) {
		t.Errorf("a second Check: %d problems, %v; want the same %d", len(r2.Problems), err, len(r.Problems))
	}
}
