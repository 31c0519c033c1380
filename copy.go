package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"burner/server"
	"burner/storage"
)

func newCopyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "copy --from SRC --to DST",
		Short: "Copy a whole store into a new one: bbolt to PostgreSQL, or back",
		Long: `Copy everything a store holds into a new store: the API keys (their
hashes, names and scopes: the same keys work on the copy), every email
with its id, receivedAt, read flag and raw source, and the webhook events
waiting. UI sessions are not copied. SRC and DST are each a bbolt data
file or a postgres:// URL, as data in the config file.

DST must be new: a path where there is no file, or a database without
burner's tables, which copy creates; copy runs before the first serve on
DST. Anything else is refused and left as it was. A bbolt SRC that a
running "burner serve" holds is refused: stop it first, or copy from a
"burner backup" of it. A copy that fails removes the file it made; a
database it filled part way must be emptied before the next try.`,
		Example: `  burner copy --from /var/lib/burner/burner.db --to postgres://burner@db1/burner
  burner copy --from postgres://burner@db1/burner --to snapshot.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			from, _ := cmd.Flags().GetString("from")
			to, _ := cmd.Flags().GetString("to")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return copyStore(ctx, cfg, from, to, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().String("from", "", "the store to copy: a bbolt data `FILE` or a postgres:// URL (required)")
	cmd.Flags().String("to", "", "the new store: a path with no file, or a postgres:// URL of a database without burner's tables (required)")
	cmd.MarkFlagRequired("from")
	cmd.MarkFlagRequired("to")
	return cmd
}

// copyStore copies the store from into the new store to, printing its
// progress to out. Only the config's log settings apply.
func copyStore(ctx context.Context, cfg Config, from, to string, out, logTo io.Writer) (err error) {
	log := newLogger(cfg.Log, logTo).With("component", "storage")
	if from == "" || to == "" {
		return errors.New("copy: --from and --to must name stores")
	}
	if from == to {
		return fmt.Errorf("copy: --from and --to are both %s", showData(from))
	}
	held := fmt.Errorf("copy: %s is in use by a running burner serve: stop it first, or copy from a hot copy of it (burner backup FILE, then burner copy --from FILE)", from)
	if !isPostgres(from) {
		if _, err := server.DialControl(controlSocket(from)); err == nil {
			return held
		}
	}
	srcCfg, dstCfg := cfg, cfg
	srcCfg.Data, dstCfg.Data = from, to
	srcCfg.Webhooks, dstCfg.Webhooks = nil, nil // copy writes no event of its own
	src, err := openData(ctx, srcCfg, readOnly, log)
	if errors.Is(err, storage.ErrLocked) {
		return held
	}
	if err != nil {
		return fmt.Errorf("copy from: %w", err)
	}
	defer src.Close()
	dst, err := openData(ctx, dstCfg, mustBeNew, log)
	if err != nil {
		return fmt.Errorf("copy to: %w", err)
	}
	defer func() {
		dst.Close()
		if err == nil {
			return
		}
		if isPostgres(to) {
			err = fmt.Errorf("%w; %s now holds part of the copy: drop and create the database again before the next try", err, showData(to))
		} else if rerr := os.Remove(to); rerr != nil {
			err = fmt.Errorf("%w; the partial copy %s could not be removed: %v", err, to, rerr)
		}
	}()
	fmt.Fprintf(out, "Copying %s to %s\n", showData(from), showData(to))
	start := time.Now()
	last := start
	n, err := dst.Import(ctx, src, func(c storage.CopyCount) {
		if now := time.Now(); now.Sub(last) >= time.Second {
			last = now
			fmt.Fprintf(out, "  %s so far\n", copied(c))
		}
	})
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	fmt.Fprintf(out, "Copied %s in %s.\n", copied(n), time.Since(start).Round(time.Millisecond))
	return nil
}

// copied says what a count holds.
func copied(c storage.CopyCount) string {
	return fmt.Sprintf("%d keys, %d emails (%d messages, %s of sources), %d webhook events",
		c.Keys, c.Emails, c.Messages, formatBytes(c.Bytes), c.Events)
}
