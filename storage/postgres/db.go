// Package postgres keeps burner's emails and API keys in a PostgreSQL
// database (15 or newer) that any number of burner nodes share (spec §10).
// It implements storage.Engine with the deciding code the engines share
// (storage/internal), so that it answers as the bbolt engine does: SQL
// only prefilters.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"burner/storage"
	"burner/storage/internal/commit"
	"burner/storage/internal/record"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/klauspost/compress/zstd"
)

// Options tune Open. The zero value gives the defaults.
type Options struct {
	// Now is the clock used for receivedAt and key times; time.Now when nil.
	Now func() time.Time
	// UsageFlushInterval is how often key "last used" times held in memory
	// are written to the database; 0 means one minute (spec §10).
	UsageFlushInterval time.Duration
	// Retention is what the database keeps: MaxPerInbox holds exactly
	// across nodes, MaxBytes caps the size of the database.
	Retention storage.Retention
	// MaxConns bounds the connections of the pool; 0 means pgx's default
	// (4, or the number of CPUs if more).
	MaxConns int32
	// Log receives what the engine does beyond answering calls: schema
	// migrations, the loss of the notification connection. Nil discards it.
	Log *slog.Logger
	// Hooks are the webhooks (spec §9): Deliver writes, in the transaction
	// of each email, an event for every hook that covers its inbox
	// (outbox.go). Each needs an ID without 0x00; the IDs are distinct.
	// Every node of one database should be opened with the same hooks.
	Hooks []storage.Hook
	// ReadOnly opens the database for inspection: Open never creates or
	// upgrades the schema, refuses a database without it (an error
	// wrapping fs.ErrNotExist) or with an older one (ErrSchemaOld), and
	// every transaction is read-only, so that a write fails; key usage is
	// not recorded.
	ReadOnly bool
	// MustExist opens the database for reading and writing, but Open never
	// creates or upgrades the schema, as ReadOnly: for commands that
	// change a store the user named, where a typo must not make a new one.
	MustExist bool
	// MustBeNew makes Open refuse a database that holds burner's schema
	// already, with an error wrapping storage.ErrNotNew, and create it in
	// one that does not: the destination of a copy (storage.Engine.Import).
	MustBeNew bool
}

// ErrSchemaNew means the database holds a schema of a newer burner, which
// this one cannot read: Open refuses it rather than misread it.
var ErrSchemaNew = errors.New("storage: the database was written by a newer burner; run that version or a later one")

// ErrSchemaOld means the database holds the schema of an older burner,
// and Open was asked not to upgrade it (Options.ReadOnly, MustExist).
var ErrSchemaOld = errors.New("storage: the database has an older schema; run `burner serve` once to upgrade it")

// DB is an open burner database. It is safe for concurrent use.
type DB struct {
	pool      *pgxpool.Pool
	now       func() time.Time
	log       *slog.Logger
	retention storage.Retention
	readOnly  bool   // Options.ReadOnly
	node      string // this DB's name in the payloads of its notifications

	commits commit.Group[*delivery] // the batched commit of Deliver
	writes  commit.Health           // whether Deliver's last commit failed (spec §5)

	changes  commit.Notifier
	waitedMu sync.Mutex
	waited   map[string]struct{} // inboxes that may have waiters: what wakeAll wakes

	zenc *zstd.Encoder // raw sources; EncodeAll and DecodeAll are safe for concurrent use
	zdec *zstd.Decoder

	// recentWalk is how many emails RecentInboxes walks before it groups
	// them all instead; defaultRecentWalk when 0. A test makes it short.
	recentWalk int

	sizeMu   sync.Mutex
	size     int64     // pg_database_size at sizeTime, for MaxBytes
	sizeTime time.Time // zero until measured

	keys keyCache

	verdicts    commit.Later[*commit.Verdict] // PutAuth's records waiting for their transaction (auth.go)
	authChanges commit.Notifier               // wakes the waiters of AuthChanged, by email id

	hooks  []storage.Hook  // Options.Hooks, their scopes cleaned
	events commit.Notifier // woken, per hook id, after a commit that adds events

	stop func() // ends the goroutines below, which wg waits for
	wg   sync.WaitGroup

	closed atomic.Bool
}

// Open connects to the database at url (a postgres:// URL; libpq's
// environment variables apply), creates or upgrades burner's schema in it
// under an advisory lock, one node at a time, and starts listening for
// the deliveries of other nodes. It returns an error wrapping ErrSchemaNew
// for a database of a newer burner, and storage.ErrUnavailable when the
// database cannot be reached. Options.ReadOnly, MustExist and MustBeNew
// narrow what it accepts, decided under the same lock.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.UsageFlushInterval == 0 {
		opts.UsageFlushInterval = time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	hooks, err := cleanHooks(opts.Hooks)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A database host that drops packets must fail a delivery (451)
		// in seconds, not hang it.
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.ReadOnly {
		// The database, not this code, keeps inspection from writing.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := migrate(ctx, pool, opts, opts.Log); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", unavailable(err))
	}
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true))
	if err != nil {
		pool.Close()
		return nil, err
	}
	zdec, err := zstd.NewReader(nil, zstd.WithDecoderLowmem(true))
	if err != nil {
		pool.Close()
		return nil, err
	}
	db := &DB{
		pool:      pool,
		now:       opts.Now,
		log:       opts.Log,
		retention: opts.Retention,
		readOnly:  opts.ReadOnly,
		node:      record.NewID().String(),
		waited:    make(map[string]struct{}),
		zenc:      zenc,
		zdec:      zdec,
		keys:      keyCache{checked: make(map[storage.KeyHash]cachedKey)},
		hooks:     hooks,
	}
	db.commits.Max = maxBatch
	db.verdicts.Delay, db.verdicts.Due = verdictDelay, db.flushVerdicts
	bg, stop := context.WithCancel(context.Background())
	db.stop = stop
	ready := make(chan error, 1)
	db.wg.Add(2)
	go db.listen(bg, cfg.ConnConfig.Copy(), ready)
	go db.flushUsageEvery(bg, opts.UsageFlushInterval)
	// Wait for the first LISTEN, so that a waiter of this node hears every
	// delivery that commits after Open returns.
	if err := <-ready; err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres: listen: %w", unavailable(err))
	}
	return db, nil
}

// Close writes pending key usage, stops listening and closes the pool. It
// is safe to call more than once.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return nil
	}
	db.stop()
	db.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := db.flushUsage(ctx)
	db.pool.Close()
	db.zenc.Close()
	db.zdec.Close()
	return err
}

// CheckWritable fails when the database cannot take a write now (an error
// wrapping storage.ErrUnavailable when it cannot be reached), with an
// error wrapping ErrFull when it is at Options.Retention.MaxBytes, and with one
// wrapping storage.ErrWriteFailed while the last delivery's commit failed
// for a storage reason (a full disk, an I/O error) and none has succeeded
// since (spec §5).
func (db *DB) CheckWritable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A write, not a ping: a standby or a database out of disk answers a
	// ping but refuses mail.
	if _, err := db.pool.Exec(ctx, `UPDATE burner_schema SET checked = now()`); err != nil {
		return fmt.Errorf("check writable: %w", db.fail(err))
	}
	if err := db.checkRoom(ctx, 0, true); err != nil {
		return fmt.Errorf("check writable: %w", err)
	}
	// The update above fits in the page of its one row: a disk that
	// filled up fails only the writes that grow a table.
	if err := db.writes.Err(); err != nil {
		return fmt.Errorf("check writable: %w", err)
	}
	return nil
}

// sizeEvery is how long a measure of the database's size is trusted for
// Options.Retention.MaxBytes: pg_database_size walks the data directory.
const sizeEvery = 5 * time.Second

// checkRoom returns an error wrapping ErrFull when n more bytes would take
// the database past Options.Retention.MaxBytes; fresh measures the size now.
func (db *DB) checkRoom(ctx context.Context, n int, fresh bool) error {
	if db.retention.MaxBytes <= 0 {
		return nil
	}
	db.sizeMu.Lock()
	defer db.sizeMu.Unlock()
	if fresh || db.sizeTime.IsZero() || time.Since(db.sizeTime) > sizeEvery {
		if err := db.pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&db.size); err != nil {
			return db.fail(err)
		}
		db.sizeTime = time.Now()
	}
	if db.size+int64(n) > db.retention.MaxBytes {
		return storage.ErrFull
	}
	return nil
}

// fail returns err, wrapping storage.ErrUnavailable when it says the
// database could not be reached, and storage.ErrFull when its disk is full.
// A write to a DB opened read-only is refused by the database as one to a
// standby is, but it is no outage.
func (db *DB) fail(err error) error {
	var pgErr *pgconn.PgError
	if db.readOnly && errors.As(err, &pgErr) && pgErr.Code == "25006" {
		return fmt.Errorf("the store is open read-only: %w", err)
	}
	return unavailable(err)
}

func unavailable(err error) error {
	if err == nil || errors.Is(err, storage.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "53100": // disk_full
			return fmt.Errorf("%w: %w: %w", storage.ErrFull, storage.ErrWriteFailed, err)
		case pgErr.Code[:2] == "53" && pgErr.Code != "53300", // insufficient resources (53300, too many connections, below)
			pgErr.Code[:2] == "58", // system error: an I/O error of the server
			pgErr.Code[:2] == "XX": // internal error: data corrupted
			return fmt.Errorf("%w: %w", storage.ErrWriteFailed, err)
		case pgErr.Code[:2] == "08", // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutting down, starting up
			pgErr.Code == "53300", // too many connections
			pgErr.Code == "25006": // read-only transaction: a standby
			return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
		}
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, storage.ErrNotFound) {
		return err
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || pgconn.SafeToRetry(err) || isNetwork(err) {
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	return err
}

// DB is a whole storage.Engine. Asserted so that a signature that drifts
// from the contract fails the build.
var _ storage.Engine = (*DB)(nil)
