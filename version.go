package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commit is set at build time with -ldflags "-X main.commit=<sha>", as the
// release command (packaging/release) does next to main.version.
var commit = ""

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print burner's version, the commit it was built from and its Go version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "burner", versionInfo())
		},
	}
}

// addVersionFlag gives root a --version flag printing what "burner
// version" prints.
func addVersionFlag(root *cobra.Command) {
	root.Version = versionInfo()
	root.SetVersionTemplate("burner {{.Version}}\n")
}

// versionInfo returns the version, the commit and the Go version, as
// "1.2.3 (commit 0123abcd, go1.26.8 linux/amd64)".
func versionInfo() string {
	return fmt.Sprintf("%s (commit %s, %s %s/%s)", buildVersion(), buildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// buildVersion returns the version stamped by the release, else the
// module's version in the build info (go install burner@v1.2.3), else
// "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// buildCommit returns the commit stamped by the release, else the one
// go build recorded from the git checkout (with "-dirty" when the tree
// had changes), else "unknown": a build outside git, or go run and go
// test, which record none.
func buildCommit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return "unknown"
	}
	return rev + dirty
}
