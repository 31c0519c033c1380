// Command burner is a self-hosted disposable-inbox appliance: it receives
// mail over SMTP for its inbox domains, keeps it in a bbolt file or a PostgreSQL
// database and serves it through a REST API.
//
// The commands live one group to a file: serve.go (serve, its wiring and
// shutdown), keys.go (keys create, list, revoke), admin.go (backup, check,
// stats, inboxes), copy.go (copy), version.go, health.go; config.go reads
// the configuration (env.go its BURNER_ variables) and store.go opens the
// store every command works on.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
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

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "burner",
		Short: "A self-hosted disposable-inbox appliance: SMTP in, REST API out, a bbolt file or PostgreSQL",
		Long: `burner receives mail over SMTP for its inbox domains, keeps it in one bbolt
file and serves it through a REST API and a web UI.

Settings come from the built-in defaults, then the config file, then the
environment (every key as BURNER_<SECTION>_<KEY>: BURNER_DATA=/data/burner.db,
BURNER_SMTP_DOMAINS=a.test,b.test), then the flags given. Every command
but serve works whether or not "burner serve" runs: while it does, they
talk to it over the control socket next to the data file (DATA.sock);
otherwise they open the file themselves. Only serve and "keys create" make
a new data file; check, stats, inboxes, backup and "keys list" open it
read-only and never change it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("config", "", "the TOML config `FILE` (default ./"+defaultConfigFile+" when it exists, else the built-in defaults; see config.example.toml)")
	root.AddCommand(newServeCmd(), newKeysCmd(), newBackupCmd(), newCopyCmd(), newCheckCmd(), newStatsCmd(), newInboxesCmd(), newVersionCmd(), newHealthCmd())
	addVersionFlag(root)
	return root
}
