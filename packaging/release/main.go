// Command release builds burner's release files from the source tree:
//
//	go run ./packaging/release --version 1.2.3 --out dist
//
// writes into dist a tarball of the static binary for linux/amd64 and
// linux/arm64 (with LICENSE, README.md, config.example.toml and the
// systemd units), a Debian package for each, the client
// libraries as packages (burner-client-VERSION.tgz for npm,
// burner_client-VERSION-py3-none-any.whl and burner_client-VERSION.tar.gz
// for pip; clients.go), SHA256SUMS over them, and container/, the build
// context of the container image (packaging/Containerfile).
//
// The files are reproducible: two runs on the same commit with the same Go
// give the same bytes. Every timestamp is SOURCE_DATE_EPOCH, else the
// commit's time, else a fixed date; archives list their files sorted, with
// fixed owners; binaries are built with -trimpath. Only Go is needed: git,
// when present, supplies the commit and its time. No network either: the
// client packages are written here, not by npm or setuptools.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// arches are the release's architectures, in Go's and Debian's names alike.
var arches = []string{"amd64", "arm64"}

// fallbackEpoch stamps the files of a build with neither
// SOURCE_DATE_EPOCH nor git: any fixed time keeps them reproducible.
var fallbackEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// options is what one release is made of.
type options struct {
	Version string // 1.2.3: no leading v, as Debian wants it
	// NPMVersion and PyVersion are Version as npm (SemVer) and Python
	// (PEP 440) spell it, for the client packages.
	NPMVersion, PyVersion string
	Commit                string    // stamped into the binary; "unknown" without git
	Epoch                 time.Time // every file's modification time
	Src                   string    // the source tree: the directory of go.mod
	Out                   string    // where the files go
	CABundle              string    // the CA certificates put in the container image
	Log                   io.Writer // progress, one line a step
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, log io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(log)
	version := fs.String("version", "", "the release's `VERSION`, e.g. 1.2.3 (required)")
	out := fs.String("out", "dist", "the `DIR` to write the files into; made when missing")
	commit := fs.String("commit", "", "the `COMMIT` to stamp into the binary (default: git's HEAD, else \"unknown\")")
	ca := fs.String("ca-bundle", "", "the CA certificates `FILE` for the container image (default: the build host's, e.g. /etc/ssl/certs/ca-certificates.crt)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	opts, err := resolve(ctx, *version, *commit, *ca, *out, log)
	if err != nil {
		return err
	}
	return release(ctx, opts)
}

// debVersion is what Debian accepts as an upstream version: a digit first,
// then letters, digits and .+~-
var debVersion = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~-]*$`)

// resolve fills in the options the flags left to the environment.
func resolve(ctx context.Context, version, commit, ca, out string, log io.Writer) (options, error) {
	version = strings.TrimPrefix(version, "v")
	if !debVersion.MatchString(version) {
		return options{}, fmt.Errorf("--version %q: want a version such as 1.2.3", version)
	}
	npmVersion, pyVersion, err := clientVersions(version)
	if err != nil {
		return options{}, err
	}
	src, err := moduleDir(ctx)
	if err != nil {
		return options{}, err
	}
	if commit == "" {
		commit = gitCommit(ctx, src)
	}
	epoch, err := sourceDateEpoch(ctx, src)
	if err != nil {
		return options{}, err
	}
	if ca == "" {
		if ca, err = findCABundle(); err != nil {
			return options{}, err
		}
	}
	if out, err = filepath.Abs(out); err != nil {
		return options{}, err
	}
	return options{Version: version, NPMVersion: npmVersion, PyVersion: pyVersion, Commit: commit, Epoch: epoch, Src: src, Out: out, CABundle: ca, Log: log}, nil
}

// moduleDir returns the directory of burner's go.mod, from wherever the
// command runs in the tree.
func moduleDir(ctx context.Context) (string, error) {
	b, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(b))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside burner's source tree: run it from there (go run ./packaging/release)")
	}
	return filepath.Dir(mod), nil
}

// gitCommit returns HEAD's commit, with "-dirty" when tracked files
// differ from it, or "unknown" without git or outside a checkout.
func gitCommit(ctx context.Context, src string) string {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = src
		b, err := cmd.Output()
		return strings.TrimSpace(string(b)), err
	}
	rev, err := git("rev-parse", "HEAD")
	if err != nil || rev == "" {
		return "unknown"
	}
	if st, err := git("status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		rev += "-dirty"
	}
	return rev
}

// sourceDateEpoch returns the time every file is stamped with:
// SOURCE_DATE_EPOCH (reproducible-builds.org), else the time of git's
// HEAD, else fallbackEpoch.
func sourceDateEpoch(ctx context.Context, src string) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", s)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	cmd := exec.CommandContext(ctx, "git", "log", "-1", "--format=%ct")
	cmd.Dir = src
	if b, err := cmd.Output(); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return time.Unix(n, 0).UTC(), nil
		}
	}
	return fallbackEpoch, nil
}

// findCABundle returns the build host's CA certificates, where Debian,
// Fedora, Alpine and macOS keep them.
func findCABundle() (string, error) {
	for _, p := range []string{
		"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine
		"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
		"/etc/ssl/cert.pem",                  // macOS, Alpine, the BSDs
	} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no CA certificates on this machine for the container image: name a PEM bundle with --ca-bundle")
}

// release writes every file of the release into opts.Out.
func release(ctx context.Context, opts options) error {
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "burner-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var files []string
	bins := map[string]string{}
	for _, arch := range arches {
		bin := filepath.Join(work, arch, "burner")
		fmt.Fprintf(opts.Log, "build %s linux/%s\n", opts.Version, arch)
		if err := buildBinary(ctx, opts, arch, bin); err != nil {
			return err
		}
		bins[arch] = bin
		name := fmt.Sprintf("burner_%s_linux_%s.tar.gz", opts.Version, arch)
		if err := writeTarball(filepath.Join(opts.Out, name), opts, bin, arch); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		files = append(files, name)
		name = fmt.Sprintf("burner_%s_%s.deb", opts.Version, arch)
		if err := writeDeb(filepath.Join(opts.Out, name), opts, bin, arch); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		files = append(files, name)
	}
	fmt.Fprintf(opts.Log, "pack the clients %s (npm %s, Python %s)\n", opts.Version, opts.NPMVersion, opts.PyVersion)
	clients, err := writeClientPackages(opts)
	if err != nil {
		return err
	}
	files = append(files, clients...)
	if err := writeSums(opts.Out, files); err != nil {
		return err
	}
	if err := writeContainerContext(filepath.Join(opts.Out, "container"), opts, bins); err != nil {
		return fmt.Errorf("container context: %w", err)
	}
	for _, f := range append(files, "SHA256SUMS", "container/") {
		fmt.Fprintln(opts.Log, "wrote", filepath.Join(opts.Out, f))
	}
	return nil
}

// buildBinary builds the static burner for linux/arch at dst, with the
// version and commit stamped and no trace of the build machine's paths.
func buildBinary(ctx context.Context, opts options, arch, dst string) error {
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s", opts.Version, opts.Commit)
	// -buildvcs=false: the commit is stamped above, and go build would
	// fail on a checkout without the git binary.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", dst, ".")
	cmd.Dir = opts.Src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w", arch, err)
	}
	return nil
}

// writeSums writes SHA256SUMS over files in dir, in the format of
// sha256sum, which checks it: sha256sum -c SHA256SUMS.
func writeSums(dir string, files []string) error {
	sorted := append([]string(nil), files...)
	sort.Strings(sorted)
	var b strings.Builder
	for _, name := range sorted {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), name)
	}
	return writeFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// writeFile writes a file whole, through a temporary name, so that an
// interrupted release leaves no half file under the final name.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
