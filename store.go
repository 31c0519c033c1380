package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"burner/server"
	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/postgres"
)

// controlSocket is where a running server listens for the CLI: next to the
// data file, so that each data file has its own.
func controlSocket(data string) string { return data + ".sock" }

// store is what the CLI commands need of a store: the engine, opened by
// the command itself, or the running server's control socket
// (server.ControlClient), which answers alike: a part of storage.Engine.
// Backup finds storage.Snapshotter on it by type assertion.
type store interface {
	CreateKey(ctx context.Context, name string, scope storage.Scope) (storage.Key, string, error)
	Keys(ctx context.Context) ([]storage.Key, error)
	RevokeKey(ctx context.Context, idOrName string) (storage.Key, error)
	Stats(ctx context.Context) (storage.Stats, error)
	Inboxes(ctx context.Context) ([]storage.Inbox, error)
	Waiting(ctx context.Context) ([]storage.HookWaiting, error)
	Check(ctx context.Context) (storage.CheckReport, error)
}

// access is what a command may do to the store when it opens the store
// itself.
type access int

const (
	// readOnly is for inspection: the store must exist and be burner's,
	// of this version's schema, and stays as it was.
	readOnly access = iota
	// mustExist changes an existing store, and never creates one.
	mustExist
	// mayCreate creates the store when there is none.
	mayCreate
	// mustBeNew creates the store, and refuses one that exists: the
	// destination of a copy.
	mustBeNew
)

// isPostgres reports whether data names a PostgreSQL database rather than
// a bbolt file (spec §10): a postgres:// or postgresql:// URL.
func isPostgres(data string) bool {
	scheme, _, ok := strings.Cut(data, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// showData returns data as it may be shown and logged: a URL without its
// password.
func showData(data string) string {
	if !isPostgres(data) {
		return data
	}
	u, err := url.Parse(data)
	if err != nil {
		return "a postgres:// URL that does not parse"
	}
	return u.Redacted()
}

// openData opens the store that cfg.Data names, as mode allows: the bbolt
// file at a path, or the PostgreSQL database of a URL, whose libpq
// environment variables (PGPASSWORD, PGPASSFILE, PGSSLMODE, ...) apply.
// It is the one place where main names an engine.
func openData(ctx context.Context, cfg Config, mode access, log *slog.Logger) (storage.Engine, error) {
	hooks := make([]storage.Hook, len(cfg.Webhooks))
	for i, w := range cfg.Webhooks {
		hooks[i] = w.webhook().StorageHook()
	}
	retention := storage.Retention{
		MaxAge:      cfg.Retention.MaxAge.Duration,
		MaxPerInbox: cfg.Retention.MaxPerInbox,
		MaxBytes:    cfg.Retention.MaxBytes,

		SessionsMaxAge: cfg.Retention.SessionsMaxAge.Duration,
		MaxSessions:    cfg.Retention.MaxSessions,
	}
	if isPostgres(cfg.Data) {
		return openPostgres(ctx, cfg, mode, retention, hooks, log)
	}
	if mode == mustBeNew {
		if _, err := os.Lstat(cfg.Data); !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w: a copy makes a new data file; name a path where there is none", cfg.Data, storage.ErrNotNew)
		}
	}
	db, err := boltdb.Open(cfg.Data, boltdb.Options{
		Retention: retention,
		Hooks:     hooks,
		ReadOnly:  mode == readOnly,
		MustExist: mode == mustExist,
		Log:       log,
	})
	if err != nil {
		return nil, openError(cfg.Data, err, mode == mayCreate || mode == mustBeNew)
	}
	return db, nil
}

// openPostgres opens the PostgreSQL database of cfg.Data. Only serve
// (mayCreate) and copy (mustBeNew) may create burner's schema in it; the
// engine decides under its schema lock.
func openPostgres(ctx context.Context, cfg Config, mode access, retention storage.Retention, hooks []storage.Hook, log *slog.Logger) (storage.Engine, error) {
	shown := showData(cfg.Data)
	db, err := postgres.Open(ctx, cfg.Data, postgres.Options{
		Retention: retention,
		Hooks:     hooks,
		Log:       log,
		ReadOnly:  mode == readOnly,
		MustExist: mode == mustExist,
		MustBeNew: mode == mustBeNew,
	})
	switch {
	case errors.Is(err, storage.ErrNotNew):
		return nil, fmt.Errorf("%s: %w: a copy goes to a database without burner's tables", shown, storage.ErrNotNew)
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: the database holds no burner store; check --data or data in the config file (serve, keys create and copy make one): %w", shown, fs.ErrNotExist)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	return db, nil
}

// openStore returns the running server's control socket when it answers,
// else the store, opened as mode allows; done releases it. A PostgreSQL
// store is always opened directly: any number of processes may use it.
func openStore(cmd *cobra.Command, mode access) (_ store, done func(), _ Config, _ error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, nil, Config{}, err
	}
	if !isPostgres(cfg.Data) {
		if c, err := server.DialControl(controlSocket(cfg.Data)); err == nil {
			return c, func() {}, cfg, nil
		}
	}
	db, err := openData(cmd.Context(), cfg, mode, newLogger(cfg.Log, cmd.ErrOrStderr()).With("component", "storage"))
	if err != nil {
		return nil, nil, Config{}, err
	}
	return db, func() { db.Close() }, cfg, nil
}

// openError says why the data file at path could not be opened, and what
// to do about it. The engine's own errors already name the file and say
// whether it is not burner's (boltdb.ErrNotBurner) or of another schema
// (boltdb.ErrSchemaOld, boltdb.ErrSchemaNew). Unless create, a missing
// file is most likely a mistyped --data.
func openError(path string, err error, create bool) error {
	switch {
	case errors.Is(err, fs.ErrNotExist) && !create:
		return fmt.Errorf("%s: no such data file; check --data or data in the config file (only serve and keys create make one): %w", path, fs.ErrNotExist)
	case errors.Is(err, storage.ErrLocked):
		return fmt.Errorf("%w: is another burner serving %s?", err, path)
	}
	return err
}

// withStore runs fn on the store of cmd's data file (see openStore) and
// releases it after.
func withStore(cmd *cobra.Command, mode access, fn func(st store, cfg Config) error) error {
	st, done, cfg, err := openStore(cmd, mode)
	if err != nil {
		return err
	}
	defer done()
	return fn(st, cfg)
}

// dataFlagUsage explains --data, which every command has.
const dataFlagUsage = "the store: a bbolt data `FILE`, or a PostgreSQL database as a postgres:// URL; overrides data in the config file"

func addDataFlag(cmd *cobra.Command) {
	cmd.Flags().String("data", defaultConfig().Data, dataFlagUsage)
}
