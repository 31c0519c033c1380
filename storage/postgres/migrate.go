package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"

	"burner/storage"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema. Every byte that comes from mail is bytea: text rejects NUL
// and invalid UTF-8, and mail has both. Times are integer milliseconds
// since 1970, as receivedAt is (spec §3).
//
//	inboxes:  one row per inbox (InboxName) with mail (Sweep forgets the
//	          empty ones): the row a delivery locks, so that deliveries
//	          to one inbox serialise (receivedAt strictly increasing,
//	          max_per_inbox exact) and deliveries to others do not.
//	messages: a message as delivered, once for all its recipients, keyed
//	          by the id of its first email: what List reads of it, the
//	          filters included (the search text and fields folded by
//	          storage's code, the header fields with values folded). A
//	          search reads the search text of a whole inbox, so these rows
//	          stay narrow and are compressed only past 8 KB
//	          (toast_tuple_target), then with lz4, four times as fast to
//	          read as pglz. The search text is in search_text when it is
//	          valid UTF-8 without NUL, as nearly all is, for strpos
//	          (Boyer-Moore-Horspool) runs twice as fast as position on
//	          bytea (a naive loop); else in search.
//	bodies:   the rest of a message, keyed alike, read for the emails
//	          returned: the body, the plain text and links, the raw source
//	          compressed by burner (zstd, so stored EXTERNAL: PostgreSQL
//	          does not compress it again), and the attachment index.
//	          Since version 6 also the authentication record (auth,
//	          auth.go; NULL for a message stored before: status off).
//	emails:   one row per recipient: its id, inbox, receivedAt, the arrival
//	          order (seq) and its message. (inbox, received_at, seq) is the
//	          order of List. No foreign key to messages: a message (and its
//	          body) whose last email is gone is deleted in the same
//	          transaction, or, when two transactions each deleted one of its
//	          emails, by Sweep. Since version 4 also the signature of its
//	          message (sig: match.EmailSignature, signature.go), so that
//	          a body filter or a search rules most emails out on these
//	          narrow rows, before it looks up their messages. NULL (the
//	          rows of older versions, or a text too short or too varied)
//	          rules nothing out.
//	keys:     API keys: only the SHA-256 of a secret (keyring.Hash), and
//	          the key's scope (storage.CleanScope's form). Since version 5
//	          also whether it is for metrics alone (metrics), which a
//	          constraint keeps without patterns and read-only.
//	events:   the webhook outbox (spec §9, outbox.go): one row per email
//	          and hook, written in the delivery's transaction, with its
//	          attempts, when it is due and the lease of the node sending it.
//	event_messages: what the events of one message share (sender, subject,
//	          body), once per delivery, keyed by the message's id; it goes
//	          with its last event.
//	sessions: web UI sessions (spec §10, sessions.go): the SHA-256 of each
//	          token, its key, and when it expires; a revoked key takes its
//	          sessions with it.
//	smtp_sessions: the SMTP session log (spec §13.1, smtplog.go): one row
//	          per session, keyed by its start and id (the log's order), its
//	          record as record.EncodeSMTPSession makes it, whether it is
//	          ended, the inboxes its RCPTs named (a GIN index, for a
//	          listing by inbox; its fast update, the default, makes a
//	          delivery's share of it an append to a pending list), and
//	          seq, the order rows were made in, which holds the cap: the
//	          rows of the last max_sessions seqs are at most max_sessions.
//	fault_rules: fault rules (spec §13.2, faults.go), seq their creation
//	          order; used counts their uses, taken one at a time with an
//	          UPDATE that no two nodes can both win past times.
//	fault_rcpts: when each RCPT that a rule with per_minute counts came,
//	          for a minute.
//
// migrations[i] brings a database from version i to i+1.
var migrations = []string{
	`CREATE TABLE burner_schema (version integer NOT NULL, checked timestamptz);
	INSERT INTO burner_schema (version) VALUES (0);
	CREATE TABLE inboxes (name text PRIMARY KEY);
	CREATE TABLE messages (
		id uuid PRIMARY KEY,
		from_addr bytea NOT NULL,
		from_name bytea NOT NULL,
		subject bytea,
		fsubject bytea,
		fsender bytea NOT NULL,
		search_text text,
		search bytea,
		headers bytea NOT NULL
	) WITH (toast_tuple_target = 8160);
	ALTER TABLE messages ALTER COLUMN search_text SET COMPRESSION lz4;
	ALTER TABLE messages ALTER COLUMN search SET COMPRESSION lz4;
	ALTER TABLE messages ALTER COLUMN headers SET COMPRESSION lz4;
	CREATE TABLE bodies (
		id uuid PRIMARY KEY,
		body bytea,
		plain bytea NOT NULL,
		links bytea NOT NULL,
		raw bytea NOT NULL,
		attachments bytea
	);
	ALTER TABLE bodies ALTER COLUMN raw SET STORAGE EXTERNAL;
	CREATE TABLE emails (
		seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		id uuid NOT NULL UNIQUE,
		inbox text NOT NULL,
		received_at bigint NOT NULL,
		message uuid NOT NULL,
		to_addr bytea NOT NULL,
		read boolean NOT NULL DEFAULT false
	);
	CREATE INDEX emails_inbox ON emails (inbox, received_at, seq);
	CREATE INDEX emails_message ON emails (message);
	CREATE INDEX emails_received ON emails (received_at);
	CREATE TABLE keys (
		id text PRIMARY KEY,
		name text NOT NULL UNIQUE,
		created bigint NOT NULL,
		last_used bigint NOT NULL DEFAULT 0,
		hash bytea NOT NULL UNIQUE,
		inboxes text[] NOT NULL DEFAULT '{}',
		read_only boolean NOT NULL DEFAULT false
	);`,
	`CREATE TABLE event_messages (
		id uuid PRIMARY KEY,
		from_addr bytea NOT NULL,
		from_name bytea NOT NULL,
		subject bytea,
		body bytea
	);
	CREATE TABLE events (
		hook text NOT NULL,
		email uuid NOT NULL,
		received_at bigint NOT NULL,
		next_at bigint NOT NULL,
		attempts integer NOT NULL DEFAULT 0,
		lease_until bigint NOT NULL DEFAULT 0,
		lease_node text,
		lease_owner text,
		to_addr bytea NOT NULL,
		message uuid NOT NULL,
		PRIMARY KEY (hook, email)
	);
	CREATE INDEX events_due ON events (hook, next_at);
	CREATE INDEX events_received ON events (received_at);
	CREATE INDEX events_message ON events (message);`,
	`CREATE TABLE sessions (
		hash bytea PRIMARY KEY,
		key_id text NOT NULL REFERENCES keys (id) ON DELETE CASCADE,
		expires bigint NOT NULL
	);
	CREATE INDEX sessions_key ON sessions (key_id);
	CREATE INDEX sessions_expires ON sessions (expires);`,
	// PLAIN: get_bit detoasts its argument at each call, a dozen a row;
	// signatures are kept small enough (maxStoredSignature) that a row
	// always fits in a page.
	`ALTER TABLE emails ADD COLUMN sig bytea;
	ALTER TABLE emails ALTER COLUMN sig SET STORAGE PLAIN;`,
	`ALTER TABLE keys ADD COLUMN metrics boolean NOT NULL DEFAULT false;
	ALTER TABLE keys ADD CONSTRAINT keys_metrics_alone CHECK (NOT metrics OR (read_only AND cardinality(inboxes) = 0));`,
	`ALTER TABLE bodies ADD COLUMN auth bytea;`,
	// The SMTP session log and fault rules (smtplog.go, faults.go).
	`CREATE TABLE smtp_sessions (
		started_at bigint NOT NULL,
		id uuid NOT NULL,
		seq bigint GENERATED ALWAYS AS IDENTITY,
		ended boolean NOT NULL,
		inboxes text[] NOT NULL,
		record bytea NOT NULL,
		PRIMARY KEY (started_at, id)
	);
	CREATE INDEX smtp_sessions_seq ON smtp_sessions (seq);
	CREATE INDEX smtp_sessions_inboxes ON smtp_sessions USING gin (inboxes);
	CREATE TABLE fault_rules (
		seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		id uuid NOT NULL UNIQUE,
		inbox text NOT NULL,
		stage text NOT NULL,
		reply text NOT NULL,
		times integer NOT NULL,
		used integer NOT NULL DEFAULT 0,
		delay bigint NOT NULL,
		disconnect boolean NOT NULL,
		per_minute integer NOT NULL,
		created_at bigint NOT NULL,
		config boolean NOT NULL
	);
	CREATE TABLE fault_rcpts (
		inbox text NOT NULL,
		at bigint NOT NULL
	);
	CREATE INDEX fault_rcpts_inbox ON fault_rcpts (inbox, at);`,
}

// schemaVersion is the version this burner writes and reads.
var schemaVersion = len(migrations)

// Advisory lock keys, in the one namespace of the database: 'burn' and a
// number.
const (
	lockSchema = 0x6275726e00000001
	lockSweep  = 0x6275726e00000002
)

// migrate creates or upgrades the schema, one node at a time, unless
// opts forbid it: ReadOnly and MustExist take only a schema of this
// version, MustBeNew only a database without one.
func migrate(ctx context.Context, pool *pgxpool.Pool, opts Options, log *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(lockSchema)); err != nil {
		return err
	}
	defer func() {
		// A lost connection drops the lock with it.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(lockSchema))
	}()
	version := 0
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('burner_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return err
	}
	if exists {
		if err := conn.QueryRow(ctx, `SELECT version FROM burner_schema`).Scan(&version); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
	}
	existing := opts.ReadOnly || opts.MustExist
	switch {
	case opts.MustBeNew && exists:
		return fmt.Errorf("the database holds burner's schema (version %d): %w", version, storage.ErrNotNew)
	case existing && !exists:
		return fmt.Errorf("the database holds no burner schema: %w", fs.ErrNotExist)
	case version > schemaVersion:
		return fmt.Errorf("database has schema version %d, but this burner reads versions up to %d: %w", version, schemaVersion, ErrSchemaNew)
	case existing && version < schemaVersion:
		return fmt.Errorf("database has schema version %d, this burner reads version %d: %w", version, schemaVersion, ErrSchemaOld)
	}
	for v := version; v < schemaVersion; v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE burner_schema SET version = $1`, v+1)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
		}
		log.Info("schema migrated", "version", v+1)
	}
	return nil
}

// isNetwork reports whether err is the loss of a connection.
func isNetwork(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
