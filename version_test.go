package main

import (
	"regexp"
	"runtime"
	"testing"
)

// TestVersionFlag checks that "burner --version" prints what "burner
// version" does: the version, the commit and the Go version.
func TestVersionFlag(t *testing.T) {
	cmd, err := runCmd(t, "version")
	if err != nil {
		t.Fatalf("burner version: %v", err)
	}
	flag, err := runCmd(t, "--version")
	if err != nil {
		t.Fatalf("burner --version: %v", err)
	}
	if flag != cmd {
		t.Errorf("burner --version = %q; burner version = %q; want them alike", flag, cmd)
	}
	want := `^burner \S+ \(commit \S+, ` + regexp.QuoteMeta(runtime.Version()) + ` linux/\w+\)\n$`
	if !regexp.MustCompile(want).MatchString(cmd) {
		t.Errorf("burner version = %q; want it to match %s", cmd, want)
	}
}
