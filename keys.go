package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"burner/storage"
)

func newKeysCmd() *cobra.Command {
	keys := &cobra.Command{
		Use:   "keys",
		Short: "Manage API keys (works whether or not the server runs)",
	}
	keys.PersistentFlags().String("data", defaultConfig().Data, dataFlagUsage)

	create := &cobra.Command{
		Use:   "create --name NAME [--inbox PATTERN]... [--read-only | --metrics]",
		Short: "Create an API key and print it (alone on the last line)",
		Long: `Create an API key and print it, alone on the last line; it is shown only
this once.

Without --inbox the key reaches every inbox. With --inbox, only the inboxes
matching one of the patterns: a local part (alice), or a prefix ending in
one * (ci-* is every inbox starting with ci-; * alone is every inbox).
Patterns match case-insensitively. --read-only keys may read but not
delete.

--metrics makes a key for Prometheus: it reads /metrics and nothing else
(every other route answers 403 "This API key may only read metrics.", and
the web UI refuses it). Besides it, only a key that reaches every inbox and
is not read-only may read /metrics.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, _ := cmd.Flags().GetString("name")
			patterns, _ := cmd.Flags().GetStringArray("inbox")
			ro, _ := cmd.Flags().GetBool("read-only")
			metrics, _ := cmd.Flags().GetBool("metrics")
			// Checked before the store is opened, so that a bad pattern
			// creates nothing, not even the data file.
			if metrics && len(patterns) > 0 {
				return errors.New("--metrics and --inbox cannot go together: a metrics key reads /metrics alone and reaches no inbox; no key was created")
			}
			if metrics && ro {
				return errors.New("--metrics and --read-only cannot go together: a metrics key reads /metrics alone, and is read-only already; no key was created")
			}
			for _, p := range patterns {
				if _, err := storage.ParseInboxPattern(p); err != nil {
					return badPattern(p)
				}
			}
			scope := storage.Scope{Inboxes: patterns, ReadOnly: ro, Metrics: metrics}
			return withStore(cmd, mayCreate, func(st store, _ Config) error {
				k, secret, err := st.CreateKey(cmd.Context(), name, scope)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Created key %q (id %s, inboxes %s, %s). It is shown only this once:\n%s\n",
					k.Name, k.ID, inboxesColumn(k.Scope), modeColumn(k.Scope), secret)
				return nil
			})
		},
	}
	create.Flags().String("name", "", "a unique `NAME` for the key, to list and revoke it by (required)")
	create.MarkFlagRequired("name")
	create.Flags().StringArray("inbox", nil, "limit the key to the inboxes matching `PATTERN`: a local part (alice) or a prefix ending in * (ci-*); repeat for more (default: every inbox)")
	create.Flags().Bool("read-only", false, "the key may read but not delete")
	create.Flags().Bool("metrics", false, "a key for Prometheus: it reads /metrics and nothing else")

	list := &cobra.Command{
		Use:   "list",
		Short: "List API keys: id, name, inboxes, mode, created, last used (never the secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, readOnly, func(st store, _ Config) error {
				all, err := st.Keys(cmd.Context())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tINBOXES\tMODE\tCREATED\tLAST USED")
				for _, k := range all {
					last := "never"
					if !k.LastUsed.IsZero() {
						last = k.LastUsed.Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, inboxesColumn(k.Scope), modeColumn(k.Scope),
						k.Created.Format(time.RFC3339), last)
				}
				return tw.Flush()
			})
		},
	}

	revoke := &cobra.Command{
		Use:   "revoke ID-or-NAME",
		Short: "Revoke an API key; it stops working at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, mustExist, func(st store, _ Config) error {
				k, err := st.RevokeKey(cmd.Context(), args[0])
				if errors.Is(err, storage.ErrNotFound) {
					return fmt.Errorf("no key with id or name %q", args[0])
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Revoked key %q (id %s).\n", k.Name, k.ID)
				return nil
			})
		},
	}
	keys.AddCommand(create, list, revoke)
	return keys
}

// inboxesColumn shows the inboxes a key reaches: its patterns, "*" for a
// key without any, which reaches every inbox, and "-" for a metrics key,
// which reaches none.
func inboxesColumn(s storage.Scope) string {
	switch {
	case s.Metrics:
		return "-"
	case len(s.Inboxes) == 0:
		return storage.AllInboxes
	}
	return strings.Join(s.Inboxes, ",")
}

// modeColumn shows what a key may do: read /metrics alone, or read, and
// delete unless read-only.
func modeColumn(s storage.Scope) string {
	switch {
	case s.Metrics:
		return "metrics"
	case s.ReadOnly:
		return "read-only"
	}
	return "read-write"
}

// badPattern words a refused inbox pattern for the command line.
func badPattern(p string) error {
	return fmt.Errorf("--inbox %q is not a valid pattern: a pattern is a local part (alice) or a prefix ending in one * (ci-*; * alone is every inbox), with at most 64 of the characters A-Z a-z 0-9 _ - + . before the *; no key was created", p)
}
