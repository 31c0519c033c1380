package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"burner/storage"
)

func newBackupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the data file to FILE (\"-\": stdout), hot",
		Long: `Write a consistent copy of the data file, as it is at the start of the
command, to FILE; "-" writes it to stdout. While burner serves, the copy
comes through the control socket and mail keeps arriving; otherwise the
command reads the file itself, read-only.

FILE is written under a temporary name, synced and renamed into place, so
it is either the old FILE or a complete new copy. The copy is a data file
like the original: to restore it, stop burner, copy it over the data file
(owned by burner's user) and start burner again; "burner check --data FILE"
verifies a copy first.`,
		Example: `  burner backup /var/backups/burner/burner-$(date +%a).db
  burner backup - | gzip > burner.db.gz`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// Refused before anything is opened or written: a database has
			// its own tools, which copy it hot and consistently.
			if cfg, err := loadConfig(cmd); err == nil && isPostgres(cfg.Data) {
				return fmt.Errorf("backup: %s is a PostgreSQL database, which burner does not back up; nothing was written: use pg_dump (pg_dump -Fc -f burner.dump DBNAME), or make a bbolt snapshot with burner copy --from URL --to FILE",
					showData(cfg.Data))
			}
			return withStore(cmd, readOnly, func(st store, cfg Config) error {
				if args[0] == "-" {
					_, err := backup(ctx, st, cmd.OutOrStdout())
					return err
				}
				n, err := backupTo(ctx, st, cfg.Data, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Wrote a copy of %s (%s) to %s.\n", cfg.Data, formatBytes(n), args[0])
				return nil
			})
		},
	}
	addDataFlag(cmd)
	return cmd
}

// backup writes a consistent copy of st, as it is now, to w, and returns
// its size.
func backup(ctx context.Context, st store, w io.Writer) (int64, error) {
	sn, ok := st.(storage.Snapshotter)
	if !ok {
		return 0, errors.New("backup: this store takes no hot copy of itself")
	}
	snap, err := sn.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	return snap.WriteTo(w)
}

// backupTo writes a backup of data to path: under a temporary name in
// the same directory, synced, then renamed over path, so that path never
// holds half a copy.
func backupTo(ctx context.Context, st store, data, path string) (_ int64, err error) {
	if a, err := filepath.Abs(data); err == nil {
		if b, err := filepath.Abs(path); err == nil && a == b {
			return 0, fmt.Errorf("backup: %s is the data file itself", path)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := backup(ctx, st, f)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	// The rename is durable once the directory is synced.
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return n, nil
}

func newCheckCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Verify the data file and report what it holds",
		Long: `Verify the data file: bbolt's own consistency (every page reachable or
free, once), then that burner's indexes agree with the emails (ids, inbox
counts, shared messages and their sources, key hashes). Print the counts,
and each problem found; exit with status 1 when there is one.

While burner serves, the check runs inside it and holds the write lock
until it is done: mail waits (it is not refused) for that time. Otherwise
it opens the file read-only and changes nothing in it; a file that is not
burner's, or whose schema is older or newer than this burner's, is
refused.
"burner check --data COPY" checks a backup.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, readOnly, func(st store, cfg Config) error {
				r, err := st.Check(cmd.Context())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "%s: schema version %d, %s\n", showData(cfg.Data), r.SchemaVersion, formatBytes(r.FileBytes))
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "emails\t%d\ninboxes\t%d\nmessages\t%d\nkeys\t%d\n", r.Emails, r.Inboxes, r.Messages, r.Keys)
				tw.Flush()
				if r.OK() {
					fmt.Fprintln(out, "OK: the file is consistent and burner's indexes agree with it.")
					return nil
				}
				for _, p := range r.Problems {
					fmt.Fprintln(out, "problem:", p)
				}
				if r.More > 0 {
					fmt.Fprintf(out, "... and %d more\n", r.More)
				}
				return fmt.Errorf("%s: %d problem(s) found; restore a backup (docs/deploy.md)", showData(cfg.Data), len(r.Problems)+r.More)
			})
		},
	}
	addDataFlag(cmd)
	return cmd
}

func newStatsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show what the data file holds: emails, inboxes, size, oldest email, keys, the session log, webhook events",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, readOnly, func(st store, cfg Config) error {
				s, err := st.Stats(cmd.Context())
				if err != nil {
					return err
				}
				oldest := "none"
				if !s.Oldest.IsZero() {
					oldest = fmt.Sprintf("%s (%s ago)", s.Oldest.UTC().Format(time.RFC3339), time.Since(s.Oldest).Round(time.Second))
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				what := "the data file"
				if isPostgres(cfg.Data) {
					what = "the database"
				}
				fmt.Fprintf(tw, "emails\t%d\ninboxes\t%d\nbytes\t%d (%s, %s)\noldest email\t%s\nkeys\t%d\nsmtp sessions\t%d\n",
					s.Emails, s.Inboxes, s.FileBytes, formatBytes(s.FileBytes), what, oldest, s.Keys, s.SMTPSessions)
				// spec §9: the webhook events waiting.
				ws, err := st.Waiting(cmd.Context())
				if err != nil {
					return err
				}
				if len(ws) == 0 {
					fmt.Fprintf(tw, "webhook events\tnone waiting\n")
				}
				for _, w := range ws {
					fmt.Fprintf(tw, "webhook %s\t%d waiting, oldest received %s (%s ago)\n", w.Hook, w.Events,
						w.Oldest.UTC().Format(time.RFC3339), time.Since(w.Oldest).Round(time.Second))
				}
				return tw.Flush()
			})
		},
	}
	addDataFlag(cmd)
	return cmd
}

func newInboxesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inboxes",
		Short: "List the inboxes that hold mail: name, number of emails, newest",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, readOnly, func(st store, _ Config) error {
				ins, err := st.Inboxes(cmd.Context())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "INBOX\tEMAILS\tNEWEST")
				for _, in := range ins {
					fmt.Fprintf(tw, "%s\t%d\t%s\n", in.Name, in.Emails, in.Newest.UTC().Format(time.RFC3339))
				}
				return tw.Flush()
			})
		},
	}
	addDataFlag(cmd)
	return cmd
}

// formatBytes writes n in binary units, as people read file sizes.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
