// Command burner is a self-hosted disposable-inbox appliance: it receives
// mail over SMTP for its inbox domains, keeps it in one bbolt file and serves
// it through a REST API.
//
// The commands live one group to a file: serve.go (serve, its wiring and
// shutdown), keys.go (keys create, list, revoke), admin.go (backup, check,
// stats, inboxes, version); config.go reads the configuration.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"burner/server"
	"burner/storage"
	"burner/storage/boltdb"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "burner:", err)
		os.Exit(1)
	}
}

// newLogger builds burner's one logger, writing to w.
func newLogger(cfg LogConfig, w io.Writer) *slog.Logger {
	lv, _ := cfg.level() // validate checked it
	opts := &slog.HandlerOptions{Level: lv}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// controlSocket is where a running server listens for the CLI: next to the
// data file, so that each data file has its own.
func controlSocket(data string) string { return data + ".sock" }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "burner",
		Short: "A self-hosted disposable-inbox appliance: SMTP in, REST API out, one bbolt file",
		Long: `burner receives mail over SMTP for its inbox domains, keeps it in one bbolt
file and serves it through a REST API and a web UI.

Settings come from the built-in defaults, then the config file, then the
flags given. Every command but serve works whether or not "burner serve"
runs: while it does, they talk to it over the control socket next to the
data file (DATA.sock); otherwise they open the file themselves. Only serve
and "keys create" make a new data file; check, stats, inboxes, backup and
"keys list" open it read-only and never change it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("config", "", "the TOML config `FILE` (default ./"+defaultConfigFile+" when it exists, else the built-in defaults; see config.example.toml)")
	root.AddCommand(newServeCmd(), newKeysCmd(), newBackupCmd(), newCheckCmd(), newStatsCmd(), newInboxesCmd(), newVersionCmd())
	return root
}

// store is what the CLI commands need of a data file: the engine, opened
// by the command itself, or the running server's control socket
// (server.ControlClient), which answers alike.
type store interface {
	CreateKey(ctx context.Context, name string, scope storage.Scope) (storage.Key, string, error)
	Keys(ctx context.Context) ([]storage.Key, error)
	RevokeKey(ctx context.Context, idOrName string) (storage.Key, error)
	Stats(ctx context.Context) (storage.Stats, error)
	Inboxes(ctx context.Context) ([]storage.Inbox, error)
	storage.Checker
	storage.Snapshotter
}

// access is what a command may do to the data file when it opens the file
// itself.
type access int

const (
	// readOnly is for inspection: the file must exist and be a burner data
	// file of this version's schema, and stays byte for byte as it was.
	readOnly access = iota
	// mustExist changes an existing data file, and never creates one.
	mustExist
	// mayCreate creates the data file when there is none.
	mayCreate
)

// openStore returns the running server's control socket when it answers,
// else the data file, opened as mode allows; done releases it.
func openStore(cmd *cobra.Command, mode access) (_ store, done func(), _ Config, _ error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, nil, Config{}, err
	}
	if c, err := server.DialControl(controlSocket(cfg.Data)); err == nil {
		return c, func() {}, cfg, nil
	}
	db, err := boltdb.Open(cfg.Data, boltdb.Options{
		ReadOnly:  mode == readOnly,
		MustExist: mode == mustExist,
		Log:       newLogger(cfg.Log, cmd.ErrOrStderr()).With("component", "storage"),
	})
	if err != nil {
		return nil, nil, Config{}, openError(cfg.Data, err, mode == mayCreate)
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
const dataFlagUsage = "the bbolt data `FILE`; overrides data in the config file"

func addDataFlag(cmd *cobra.Command) {
	cmd.Flags().String("data", defaultConfig().Data, dataFlagUsage)
}
