// Package boltdb keeps burner's emails, API keys, webhook events and UI
// sessions in one bbolt file: the embedded engine, for one process at a
// time (a second one gets storage.ErrLocked). It implements
// storage.Engine with the deciding code the engines share
// (storage/internal), so that it answers as the PostgreSQL engine does,
// and takes hot backups (storage.Snapshotter). The layout of each bucket
// is documented where it is encoded; Open upgrades an older file in place
// (migrate.go).
package boltdb

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"burner/storage"
	"burner/storage/internal/commit"
	"burner/storage/internal/keyring"

	bolt "go.etcd.io/bbolt"
)

// schemaVersion is written to the meta bucket of every new file. Open
// upgrades an older file in place (migrate.go) and refuses one written by a
// newer layout rather than misreading it. Adding a step to migrations bumps it.
const schemaVersion = len(migrations) + 1

// Bucket names. The layout of each is documented where it is encoded:
// codec.go for emails, ids, inboxes, contents and raw; parts.go for parts;
// auth.go for auth; keys.go for keys and keyhashes; outboxlayout.go for
// outbox and outboxnew; sessions.go for sessions; smtplog.go for smtplog;
// faults.go for faults.
var (
	bucketMeta      = []byte("meta")
	bucketEmails    = []byte("emails")
	bucketIDs       = []byte("ids")
	bucketContents  = []byte("contents")
	bucketRaw       = []byte("raw")
	bucketParts     = []byte("parts")
	bucketInboxes   = []byte("inboxes")
	bucketKeys      = []byte("keys")
	bucketKeyHashes = []byte("keyhashes")
	keySchema       = []byte("schema")
)

// Options tune Open. The zero value gives the defaults.
type Options struct {
	// Now is the clock used for receivedAt and key times; time.Now when nil.
	Now func() time.Time
	// LockTimeout is how long Open waits for another process to release the
	// file before returning ErrLocked; 0 means one second.
	LockTimeout time.Duration
	// UsageFlushInterval is how often key "last used" times held in memory
	// are written to the file; 0 means one minute (spec §1).
	UsageFlushInterval time.Duration
	// Retention is what the file keeps: MaxBytes caps the data in it.
	Retention storage.Retention
	// Log receives what Open does to the file beyond opening it: schema
	// migrations. Nil discards it.
	Log *slog.Logger
	// ReadOnly opens the file for inspection: Open never creates,
	// upgrades or writes it, and key usage is not recorded. A write
	// fails (bbolt's ErrDatabaseReadOnly).
	ReadOnly bool
	// Hooks are the webhooks (spec §9): Deliver writes, in the commit of
	// each email, an event for every hook that covers its inbox
	// (outbox.go). Each needs an ID without 0x00; the IDs are distinct.
	Hooks []storage.Hook
	// MustExist opens the file for reading and writing, but Open never
	// creates or upgrades it: for commands that change a file the user
	// named, where a typo must not make a new one.
	MustExist bool
}

// DB is an open burner data file. It is safe for concurrent use.
type DB struct {
	bolt      *bolt.DB
	now       func() time.Time
	readOnly  bool // Options.ReadOnly: key usage is not recorded
	retention storage.Retention

	commits commit.Group[*delivery] // the group commit of Deliver
	writes  commit.Health           // whether Deliver's last commit failed (spec §5)

	hooks  []storage.Hook // Options.Hooks, their scopes cleaned
	outbox outbox         // leases and outcomes of webhook events (outbox.go)

	changes     commit.Notifier // wakes the waiters of Changed
	authChanges commit.Notifier // wakes the waiters of AuthChanged, by email id

	verdicts commit.Later[*commit.Verdict] // PutAuth's records waiting for a commit (auth.go)

	usage keyring.Usage // key uses not yet written

	rcpts     rcptCounter // the RCPTs fault rules with PerMinute count (faults.go)
	smtpIndex smtpIndex   // the session log by inbox (smtplog.go)

	stop    chan struct{}
	flushed sync.WaitGroup
}

// ErrNotBurner means the file is not a burner data file: not a bbolt
// file, or one without burner's schema version (another program's).
var ErrNotBurner = errors.New("storage: not a burner data file")

// ErrSchemaOld means the data file was written by an older burner and
// must be upgraded before this one reads it, which a read-only or
// must-exist open never does.
var ErrSchemaOld = errors.New("storage: the data file has an older layout; run `burner serve` once to upgrade it")

// ErrSchemaNew means the data file was written by a newer burner, whose
// layout this one cannot read: Open refuses it rather than misread it.
var ErrSchemaNew = errors.New("storage: the data file was written by a newer burner; run that version or a later one")

// Open opens the data file at path. Unless opts.ReadOnly or opts.MustExist
// it creates a missing file and upgrades an older one in place. Its errors
// wrap, besides the path: ErrLocked when another process has the file
// open; fs.ErrNotExist for a missing file that it may not create;
// ErrNotBurner for a file that is not burner's; ErrSchemaNew for a file of
// a newer burner; and, when it may not upgrade, ErrSchemaOld.
func Open(path string, opts Options) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = time.Second
	}
	if opts.UsageFlushInterval == 0 {
		opts.UsageFlushInterval = time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	hooks := make([]storage.Hook, len(opts.Hooks))
	for i, h := range opts.Hooks {
		scope, err := storage.CleanScope(h.Scope)
		if err != nil || h.ID == "" || strings.IndexByte(h.ID, 0) >= 0 || slices.ContainsFunc(hooks[:i], func(o storage.Hook) bool { return o.ID == h.ID }) {
			return nil, fmt.Errorf("open %s: webhook %q: an empty, repeated or unusable id, or a bad scope (%v)", path, h.ID, err)
		}
		hooks[i] = storage.Hook{ID: h.ID, Scope: storage.Scope{Inboxes: scope.Inboxes}}
	}
	existing := opts.ReadOnly || opts.MustExist
	if existing {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		if fi.Size() == 0 { // bbolt would write its first pages into it
			return nil, fmt.Errorf("open %s: an empty file: %w", path, ErrNotBurner)
		}
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, ReadOnly: opts.ReadOnly})
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("open %s: %w", path, storage.ErrLocked)
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrVersionMismatch), errors.Is(err, bolt.ErrChecksum):
		return nil, fmt.Errorf("open %s: %w (%v)", path, ErrNotBurner, err)
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if existing {
		err = checkSchema(bdb)
	} else {
		err = initBuckets(bdb, opts.Log)
	}
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db := &DB{
		bolt:      bdb,
		now:       opts.Now,
		readOnly:  opts.ReadOnly,
		retention: opts.Retention,
		hooks:     hooks,
		stop:      make(chan struct{}),
	}
	db.commits.Max = maxBatch
	db.verdicts.Delay, db.verdicts.Due = verdictDelay, db.flushVerdicts
	if err := db.buildSMTPIndex(); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if !opts.ReadOnly {
		db.flushed.Add(1)
		go db.flushUsageEvery(opts.UsageFlushInterval)
		db.flushed.Add(1)
		go db.flushOutboxEvery(outboxFlushInterval)
	}
	return db, nil
}

// checkSchema returns nil when the file is a burner data file of this
// binary's schema version, and else why not, without writing.
func checkSchema(bdb *bolt.DB) error {
	return bdb.View(func(tx *bolt.Tx) error {
		version, err := readSchema(tx)
		switch {
		case err != nil:
			return err
		case version < schemaVersion:
			return fmt.Errorf("data file has schema version %d, this burner reads version %d: %w", version, schemaVersion, ErrSchemaOld)
		case version > schemaVersion:
			return fmt.Errorf("data file has schema version %d, but this burner reads versions up to %d: %w", version, schemaVersion, ErrSchemaNew)
		}
		return nil
	})
}

// readSchema returns the schema version of the file; 0 for a new file,
// which has no bucket at all, and ErrNotBurner for a file with buckets
// but no version.
func readSchema(tx *bolt.Tx) (int, error) {
	meta := tx.Bucket(bucketMeta)
	var v []byte
	if meta != nil {
		v = meta.Get(keySchema)
	}
	if v == nil {
		if k, _ := tx.Cursor().First(); k != nil {
			return 0, fmt.Errorf("it has no schema version: %w", ErrNotBurner)
		}
		return 0, nil
	}
	if len(v) != 1 || v[0] == 0 {
		return 0, fmt.Errorf("unreadable schema version %x: %w", v, ErrNotBurner)
	}
	return int(v[0]), nil
}

// initBuckets brings the file to schemaVersion, running the migrations an
// older file needs, and creates the buckets of the current layout.
func initBuckets(bdb *bolt.DB, log *slog.Logger) error {
	if err := migrate(bdb, migrations[:], log); err != nil {
		return err
	}
	return bdb.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketEmails, bucketIDs, bucketInboxes, bucketContents, bucketRaw, bucketParts, bucketKeys, bucketKeyHashes, bucketOutbox, bucketOutboxNew, bucketSessions,
			bucketAuth, bucketSMTPLog, bucketFaults} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close writes pending key usage and closes the file. It is safe to call
// more than once.
func (db *DB) Close() error {
	select {
	case <-db.stop:
		return nil
	default:
	}
	close(db.stop)
	db.flushed.Wait()
	var ferr error
	if !db.readOnly {
		ferr = errors.Join(db.flushUsage(), db.flushOutbox())
	}
	if err := db.bolt.Close(); err != nil {
		return err
	}
	return ferr
}

// Changed returns a channel that is closed once an email for the inbox
// localPart has been committed after the call (storage.Engine).
func (db *DB) Changed(localPart string) <-chan struct{} { return db.changes.Changed(localPart) }

// Path returns the file name the DB was opened with.
func (db *DB) Path() string { return db.bolt.Path() }

func (db *DB) flushUsageEvery(every time.Duration) {
	defer db.flushed.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-t.C:
			// A failed flush only loses "last used" times; they are retried
			// at the next tick because flushUsage keeps them on error.
			_ = db.flushUsage()
		}
	}
}

// DB is a whole storage.Engine, and takes hot backups. Asserted so that a
// signature that drifts from the contract fails the build.
var (
	_ storage.Engine      = (*DB)(nil)
	_ storage.Snapshotter = (*DB)(nil)
)
