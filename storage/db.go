package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrLocked means another process (usually a running `burner serve`) holds
// the data file; bbolt allows one process per file.
var ErrLocked = errors.New("storage: data file is in use by another process")

// schemaVersion is written to the meta bucket of every new file. Open
// upgrades an older file in place (migrate.go) and refuses one written by a
// newer layout rather than misreading it. Adding a step to migrations bumps it.
const schemaVersion = len(migrations) + 1

// Bucket names. The layout of each is documented where it is encoded:
// records.go for emails, ids, inboxes, contents and raw; parts.go for parts;
// keys.go for keys and keyhashes.
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
	// are written to the file; 0 means one minute (SPEC §1).
	UsageFlushInterval time.Duration
	// MaxAge is how old an email may grow before Sweep deletes it; 0 keeps
	// emails forever.
	MaxAge time.Duration
	// MaxPerInbox caps the emails of one inbox: delivery and Sweep delete
	// the oldest beyond it. 0 means no cap.
	MaxPerInbox int
	// MaxBytes caps the data in the file: past it Deliver returns ErrFull.
	// 0 means no cap.
	MaxBytes int64
	// Log receives what Open does to the file beyond opening it: schema
	// migrations. Nil discards it.
	Log *slog.Logger
}

// DB is an open burner data file. It is safe for concurrent use.
type DB struct {
	bolt        *bolt.DB
	now         func() time.Time
	maxAge      time.Duration
	maxPerInbox int
	maxBytes    int64

	commits committer // the group commit of Deliver

	notifyMu sync.Mutex
	waiting  map[string]chan struct{} // inbox name -> closed at its next delivery

	usageMu sync.Mutex
	usage   map[string]time.Time // key id -> last use not yet written

	stop    chan struct{}
	flushed sync.WaitGroup
}

// Open opens (creating if needed) the data file at path. It returns an error
// wrapping ErrLocked when another process has the file open.
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
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if err := initBuckets(bdb, opts.Log); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db := &DB{
		bolt:        bdb,
		now:         opts.Now,
		maxAge:      opts.MaxAge,
		maxPerInbox: opts.MaxPerInbox,
		maxBytes:    opts.MaxBytes,
		waiting:     make(map[string]chan struct{}),
		usage:       make(map[string]time.Time),
		stop:        make(chan struct{}),
	}
	db.flushed.Add(1)
	go db.flushUsageEvery(opts.UsageFlushInterval)
	return db, nil
}

// initBuckets brings the file to schemaVersion, running the migrations an
// older file needs, and creates the buckets of the current layout.
func initBuckets(bdb *bolt.DB, log *slog.Logger) error {
	if err := migrate(bdb, migrations[:], log); err != nil {
		return err
	}
	return bdb.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketEmails, bucketIDs, bucketInboxes, bucketContents, bucketRaw, bucketParts, bucketKeys, bucketKeyHashes} {
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
	ferr := db.flushUsage()
	if err := db.bolt.Close(); err != nil {
		return err
	}
	return ferr
}

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
