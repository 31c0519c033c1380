package postgres_test

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sync"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/postgres"
	"burner/storage/storetest"

	"github.com/jackc/pgx/v5"
)

// TestOpenConcurrently: nodes that start at once on a new database create
// the schema once, under the advisory lock, and all open.
func TestOpenConcurrently(t *testing.T) {
	dbURL := testDatabase(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := postgres.Open(context.Background(), dbURL, postgres.Options{})
			if err != nil {
				t.Errorf("postgres.Open at once with others: %v", err)
				return
			}
			db.Close()
		}()
	}
	wg.Wait()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM burner_schema`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("burner_schema holds %d rows, %v; want 1", rows, err)
	}
}

// TestRefuseNewerSchema: a node refuses a database of a newer burner.
func TestRefuseNewerSchema(t *testing.T) {
	dbURL := testDatabase(t)
	db := openDB(t, dbURL, postgres.Options{})
	db.Close()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE burner_schema SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	if db, err := postgres.Open(context.Background(), dbURL, postgres.Options{}); !errors.Is(err, postgres.ErrSchemaNew) {
		if err == nil {
			db.Close()
		}
		t.Errorf("postgres.Open of a newer schema: %v, want ErrSchemaNew", err)
	}
}

// TestOpenModes: ReadOnly and MustExist refuse a database without
// burner's schema, and create nothing; MustBeNew creates the schema once
// and refuses it after; ReadOnly and MustExist take only this version's
// schema, and ReadOnly writes nothing.
func TestOpenModes(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := func() bool {
		t.Helper()
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass('burner_schema') IS NOT NULL`).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		return exists
	}
	open := func(opts postgres.Options) error {
		db, err := postgres.Open(ctx, dbURL, opts)
		if err == nil {
			db.Close()
		}
		return err
	}
	for _, opts := range []postgres.Options{{ReadOnly: true}, {MustExist: true}} {
		if err := open(opts); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%+v) of a database without the schema: %v, want fs.ErrNotExist", opts, err)
		}
	}
	if schema() {
		t.Fatal("a refused Open made burner's schema")
	}
	if err := open(postgres.Options{MustBeNew: true}); err != nil {
		t.Fatalf("Open(MustBeNew) of a database without the schema: %v", err)
	}
	if !schema() {
		t.Fatal("Open(MustBeNew) made no schema")
	}
	if err := open(postgres.Options{MustBeNew: true}); !errors.Is(err, storage.ErrNotNew) {
		t.Errorf("Open(MustBeNew) of a database with the schema: %v, want ErrNotNew", err)
	}
	if err := open(postgres.Options{MustExist: true}); err != nil {
		t.Errorf("Open(MustExist): %v", err)
	}

	// Read-only: reads work, and every write is refused by the database.
	rw := openDB(t, dbURL, postgres.Options{})
	_, secret, err := rw.CreateKey(ctx, "k", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := postgres.Open(ctx, dbURL, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := ro.Authenticate(ctx, secret); err != nil || k.Name != "k" {
		t.Errorf("Authenticate read-only: %+v, %v", k, err)
	}
	if _, _, err := ro.CreateKey(ctx, "other", storage.Scope{}); err == nil || errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("CreateKey read-only: %v, want a refusal that is no outage", err)
	}
	if _, err := ro.Deliver(ctx, &storage.Message{From: "a@x.test", Raw: []byte("\r\n")}, []string{"a@x.test"}); err == nil {
		t.Error("Deliver read-only succeeded")
	}
	if err := ro.Close(); err != nil {
		t.Errorf("Close read-only: %v", err)
	}
	if ks, err := rw.Keys(ctx); err != nil || len(ks) != 1 || !ks[0].LastUsed.IsZero() {
		t.Errorf("after a read-only Authenticate, keys are %+v, %v; want one, never used", ks, err)
	}

	// An older schema: inspection and MustExist refuse it, unchanged.
	var older int
	if err := conn.QueryRow(ctx, `UPDATE burner_schema SET version = version - 1 RETURNING version`).Scan(&older); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []postgres.Options{{ReadOnly: true}, {MustExist: true}} {
		if err := open(opts); !errors.Is(err, postgres.ErrSchemaOld) {
			t.Errorf("Open(%+v) of an older schema: %v, want ErrSchemaOld", opts, err)
		}
	}
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM burner_schema`).Scan(&version); err != nil || version != older {
		t.Errorf("after refusals, the schema version is %d, %v; want %d, unchanged", version, err, older)
	}
	if _, err := conn.Exec(ctx, `UPDATE burner_schema SET version = version + 2`); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []postgres.Options{{ReadOnly: true}, {MustExist: true}, {}} {
		if err := open(opts); !errors.Is(err, postgres.ErrSchemaNew) {
			t.Errorf("Open(%+v) of a newer schema: %v, want ErrSchemaNew", opts, err)
		}
	}
}

// TestMigrateSignatures: a database of version 3, whose emails have no
// signatures, is brought to this version with its emails as they were: they
// are still searched (a NULL signature rules nothing out), beside new
// ones that have a signature, and the column is kept in its rows (PLAIN).
func TestMigrateSignatures(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	db := openDB(t, dbURL, postgres.Options{})
	deliver := func(db *postgres.DB, subject, text string) {
		t.Helper()
		m := storage.Message{Subject: ptr(subject), From: "a@x.org", Text: text, Raw: []byte("x")}
		if _, err := db.Deliver(ctx, &m, []string{"m@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	deliver(db, "old match", "an old needle in the text")
	deliver(db, "old other", "nothing of the sort")
	db.Close()
	conn := connect(t, dbURL)
	if _, err := conn.Exec(ctx, `ALTER TABLE emails DROP COLUMN sig; ALTER TABLE keys DROP COLUMN metrics; ALTER TABLE bodies DROP COLUMN auth;
		`+dropSMTPLog+`; UPDATE burner_schema SET version = 3`); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, dbURL, postgres.Options{})
	var (
		version int
		stored  string
		nulls   int
	)
	err := conn.QueryRow(ctx, `SELECT (SELECT version FROM burner_schema),
		(SELECT attstorage::text FROM pg_attribute WHERE attrelid = 'emails'::regclass AND attname = 'sig'),
		(SELECT count(*) FROM emails WHERE sig IS NULL)`).Scan(&version, &stored, &nulls)
	if err != nil {
		t.Fatal(err)
	}
	if version != 7 || stored != "p" || nulls != 2 {
		t.Errorf("after the migration: version %d, sig stored %q, %d emails without one; want 7, \"p\" (PLAIN), 2", version, stored, nulls)
	}
	deliver(db, "new match", "a new needle in the text")
	deliver(db, "new other", "nothing of the sort")
	var sigs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM emails WHERE sig IS NOT NULL`).Scan(&sigs); err != nil || sigs != 2 {
		t.Errorf("%d emails delivered after the migration have a signature, %v; want 2", sigs, err)
	}
	for _, q := range []storage.Query{{Body: "needle in"}, {Terms: []string{"needle", "match"}}} {
		q.LocalPart = "m"
		es, err := db.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := names(es), []string{"new match", "old match"}; !slices.Equal(got, want) {
			t.Errorf("List(%+v) = %q, want %q", q, got, want)
		}
	}
}

// TestMigrateMetricsKeys: a database of version 4, whose keys have no
// metrics column, is brought to this version with its keys as they were
// (none for metrics alone); a metrics key can then be made, and the
// database refuses one that reaches an inbox or may delete.
func TestMigrateMetricsKeys(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	db := openDB(t, dbURL, postgres.Options{})
	old, _, err := db.CreateKey(ctx, "old", storage.Scope{Inboxes: []string{"ci-*"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	conn := connect(t, dbURL)
	if _, err := conn.Exec(ctx, `ALTER TABLE keys DROP COLUMN metrics; ALTER TABLE bodies DROP COLUMN auth; `+dropSMTPLog+`; UPDATE burner_schema SET version = 4`); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, dbURL, postgres.Options{})
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM burner_schema`).Scan(&version); err != nil || version != 7 {
		t.Errorf("after the migration: version %d, %v; want 7", version, err)
	}
	k, err := db.Key(ctx, old.ID)
	if err != nil || k.Scope.Metrics || !k.Scope.ReadOnly || !slices.Equal(k.Scope.Inboxes, []string{"ci-*"}) {
		t.Errorf("Key(old) after the migration = %+v, %v; want its scope as it was", k, err)
	}
	prom, _, err := db.CreateKey(ctx, "prom", storage.Scope{Metrics: true})
	if err != nil || !prom.Scope.Metrics {
		t.Fatalf("CreateKey(prom, metrics) after the migration = %+v, %v", prom, err)
	}
	for _, set := range []string{`read_only = false`, `inboxes = '{ci-*}'`} {
		if _, err := conn.Exec(ctx, `UPDATE keys SET `+set+` WHERE name = 'prom'`); err == nil {
			t.Errorf("UPDATE keys SET %s of a metrics key: no error; want the constraint to refuse it", set)
		}
	}
}

// TestMigrateAuth: a database of version 5, whose bodies have no auth
// column, is brought to this version with its messages as they were:
// they have no authentication record and read as off; new deliveries
// and verdicts have theirs.
func TestMigrateAuth(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	db := openDB(t, dbURL, postgres.Options{})
	old, err := db.Deliver(ctx, &storage.Message{From: "a@x.org", Raw: []byte("x")}, []string{"m@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	conn := connect(t, dbURL)
	if _, err := conn.Exec(ctx, `ALTER TABLE bodies DROP COLUMN auth; `+dropSMTPLog+`; UPDATE burner_schema SET version = 5`); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dbURL, postgres.Options{})
	if r, err := db.Auth(ctx, old[0].ID); err != nil || r.Status != storage.AuthOff {
		t.Errorf("Auth of an email from before the migration = %+v, %v; want status off", r, err)
	}
	pending := storage.AuthResult{Status: storage.AuthPending, Envelope: storage.Envelope{Helo: "h.x.org"}}
	es, err := db.Deliver(ctx, &storage.Message{From: "a@x.org", Raw: []byte("y"), Auth: &pending}, []string{"m@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := db.Auth(ctx, es[0].ID); err != nil || r.Status != storage.AuthPending || r.Envelope.Helo != "h.x.org" {
		t.Errorf("Auth of an email delivered after the migration = %+v, %v; want it pending, with its HELO", r, err)
	}
	if err := db.PutAuth(ctx, []string{old[0].ID}, storage.AuthResult{Status: storage.AuthDone}); err != nil {
		t.Errorf("PutAuth of an email from before the migration: %v", err)
	}
}

// dropSMTPLog undoes the step to version 7: the session log's and the
// fault rules' tables.
const dropSMTPLog = `DROP TABLE smtp_sessions, fault_rules, fault_rcpts`

// TestMigrateSMTPLog: a database of version 6 is brought to this version
// with its mail as it was, and the session log and fault rules work.
func TestMigrateSMTPLog(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	db := openDB(t, dbURL, postgres.Options{})
	m := storage.Message{Subject: ptr("before"), Raw: []byte("x")}
	if _, err := db.Deliver(ctx, &m, []string{"m@x.org"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	conn := connect(t, dbURL)
	if _, err := conn.Exec(ctx, dropSMTPLog+`; UPDATE burner_schema SET version = 6`); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dbURL, postgres.Options{})
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM burner_schema`).Scan(&version); err != nil || version != 7 {
		t.Errorf("after the migration: version %d, %v; want 7", version, err)
	}
	if es, err := db.List(ctx, storage.Query{LocalPart: "m"}); err != nil || len(es) != 1 {
		t.Errorf("List(m) after the migration = %d emails, %v; want the one from before", len(es), err)
	}
	s := storetest.SMTPSession("0195f3b0-0000-7000-8000-000000000001", time.Now(), true, "m@inbox.test")
	if err := db.WriteSMTPSessions(ctx, []storage.SMTPSession{s}); err != nil {
		t.Errorf("WriteSMTPSessions after the migration: %v", err)
	}
	if _, err := db.CreateFaultRule(ctx, storage.FaultRule{Inbox: "m", Stage: storage.FaultAtRcpt, Reply: "451"}); err != nil {
		t.Errorf("CreateFaultRule after the migration: %v", err)
	}
}
