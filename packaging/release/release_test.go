package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// testEpoch stamps the test releases, as SOURCE_DATE_EPOCH would.
var testEpoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// releases holds the releases built so far, by version, in a directory
// removed by TestMain: the tests share them, as each costs two builds.
var releases = struct {
	sync.Mutex
	root string
	dirs map[string]string
}{dirs: map[string]string{}}

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "burner-release-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	releases.root = root
	// The release runs as the command it is, built without the race
	// detector, which would make its compression minutes slower.
	build := exec.Command("go", "build", "-o", filepath.Join(root, "release"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./packaging/release: %v\n%s", err, out)
		os.RemoveAll(root)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(root)
	os.Exit(code)
}

// buildRelease runs the release command's steps for version into a new
// directory under dir and returns it.
func buildRelease(t *testing.T, version, dir string) string {
	t.Helper()
	out, err := os.MkdirTemp(dir, "dist-"+version+"-")
	if err != nil {
		t.Fatal(err)
	}
	ca := ""
	if _, err := findCABundle(); err != nil {
		// The image is not built from it here; any PEM file will do.
		ca = filepath.Join(out, "ca.pem")
		if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	cmd := exec.Command(filepath.Join(releases.root, "release"), "--version", version, "--out", out, "--commit", "0123456789abcdef", "--ca-bundle", ca)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", testEpoch.Unix()))
	log, err := cmd.CombinedOutput()
	if ca != "" {
		os.Remove(ca)
	}
	if err != nil {
		t.Fatalf("release --version %s: %v\n%s", version, err, log)
	}
	t.Logf("release %s built in %s", version, time.Since(start).Round(time.Millisecond))
	return out
}

// sharedRelease returns the release of version, built once for every
// test that asks.
func sharedRelease(t *testing.T, version string) string {
	t.Helper()
	releases.Lock()
	defer releases.Unlock()
	if d, ok := releases.dirs[version]; ok {
		return d
	}
	d := buildRelease(t, version, releases.root)
	releases.dirs[version] = d
	return d
}

// TestReproducible builds the same release twice and compares every file
// byte for byte, then checks what the files hold.
func TestReproducible(t *testing.T) {
	a := sharedRelease(t, "1.2.3")
	b := buildRelease(t, "1.2.3", t.TempDir())
	want := []string{
		"SHA256SUMS",
		"burner-client-1.2.3.tgz",
		"burner_1.2.3_amd64.deb",
		"burner_1.2.3_arm64.deb",
		"burner_1.2.3_linux_amd64.tar.gz",
		"burner_1.2.3_linux_arm64.tar.gz",
		"burner_client-1.2.3-py3-none-any.whl",
		"burner_client-1.2.3.tar.gz",
		"container/Containerfile",
		"container/bin/amd64/burner",
		"container/bin/arm64/burner",
		"container/rootfs/etc/burner/burner.toml",
		"container/rootfs/etc/group",
		"container/rootfs/etc/passwd",
		"container/rootfs/etc/ssl/certs/ca-certificates.crt",
	}
	filesA, filesB := listFiles(t, a), listFiles(t, b)
	if strings.Join(filesA, " ") != strings.Join(want, " ") {
		t.Errorf("the release wrote %q, want %q", filesA, want)
	}
	if strings.Join(filesA, " ") != strings.Join(filesB, " ") {
		t.Fatalf("two runs wrote different files: %q and %q", filesA, filesB)
	}
	for _, name := range filesA {
		x, y := readFile(t, filepath.Join(a, name)), readFile(t, filepath.Join(b, name))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs of the same release (%d and %d bytes)", name, len(x), len(y))
		}
	}
}

// TestSHA256SUMS checks the sums against the files.
func TestSHA256SUMS(t *testing.T) {
	dir := sharedRelease(t, "1.2.3")
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "SHA256SUMS")))), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not \"SUM  NAME\"", line)
		}
		h := sha256.Sum256(readFile(t, filepath.Join(dir, name)))
		if got := hex.EncodeToString(h[:]); got != sum {
			t.Errorf("SHA256SUMS says %s for %s; the file's is %s", sum, name, got)
		}
		names = append(names, name)
	}
	want := "burner-client-1.2.3.tgz burner_1.2.3_amd64.deb burner_1.2.3_arm64.deb burner_1.2.3_linux_amd64.tar.gz burner_1.2.3_linux_arm64.tar.gz burner_client-1.2.3-py3-none-any.whl burner_client-1.2.3.tar.gz"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("SHA256SUMS covers %s, want %s", got, want)
	}
}

// TestTarballs unpacks each tarball, checks its files, their modes and
// times, and the binary's architecture; it runs the binary of this
// machine's architecture for its version.
func TestTarballs(t *testing.T) {
	dir := sharedRelease(t, "1.2.3")
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		t.Run(arch, func(t *testing.T) {
			name := "burner_1.2.3_linux_" + arch + ".tar.gz"
			prefix := "burner_1.2.3_linux_" + arch + "/"
			entries := readTarball(t, filepath.Join(dir, name))
			var got []string
			for _, e := range entries {
				got = append(got, fmt.Sprintf("%s %o %s:%s", e.hdr.Name, e.hdr.Mode, e.hdr.Uname, e.hdr.Gname))
				if !e.hdr.ModTime.Equal(testEpoch) {
					t.Errorf("%s: %s is dated %s, want SOURCE_DATE_EPOCH's %s", name, e.hdr.Name, e.hdr.ModTime, testEpoch)
				}
			}
			want := []string{
				prefix + " 755 root:root",
				prefix + "LICENSE 644 root:root",
				prefix + "README.md 644 root:root",
				prefix + "burner 755 root:root",
				prefix + "burner-backup.service 644 root:root",
				prefix + "burner-backup.timer 644 root:root",
				prefix + "burner.service 644 root:root",
				prefix + "config.example.toml 644 root:root",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s holds\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			var bin []byte
			for _, e := range entries {
				if e.hdr.Name == prefix+"burner" {
					bin = e.data
				}
			}
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil {
				t.Fatalf("%s: burner is not an ELF file: %v", name, err)
			}
			if f.Machine != machine {
				t.Errorf("%s: burner is built for %s, want %s", name, f.Machine, machine)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s: burner asks for a dynamic loader; want a static binary (CGO_ENABLED=0)", name)
				}
			}
			if bytes.Contains(bin, []byte(releases.root)) || bytes.Contains(bin, []byte(os.Getenv("HOME")+"/go/pkg/mod")) {
				t.Errorf("%s: burner holds a path of the build machine; want -trimpath", name)
			}
			if arch != runtime.GOARCH {
				return
			}
			exe := filepath.Join(t.TempDir(), "burner")
			if err := os.WriteFile(exe, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"version"}, {"--version"}} {
				out, err := exec.Command(exe, args...).CombinedOutput()
				want := fmt.Sprintf("burner 1.2.3 (commit 0123456789abcdef, %s linux/%s)\n", runtime.Version(), arch)
				if err != nil || string(out) != want {
					t.Errorf("burner %s = %q, %v; want %q", args[0], out, err, want)
				}
			}
		})
	}
}

// TestVersionFlag checks the versions the command accepts.
func TestVersionFlag(t *testing.T) {
	for _, v := range []string{"", "latest", "1.2.3 rc", "-1"} {
		err := run(context.Background(), []string{"--version", v, "--out", t.TempDir()}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--version") {
			t.Errorf("release --version %q: %v; want an error about --version", v, err)
		}
	}
}

type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

func readTarball(t *testing.T, path string) []tarEntry {
	t.Helper()
	return readTarGz(t, path, readFile(t, path))
}

// readTarGz returns the entries of the tar.gz b, called name in failures.
func readTarGz(t *testing.T, name string, b []byte) []tarEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tr := tar.NewReader(zr)
	var entries []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		entries = append(entries, tarEntry{h, data})
	}
}

// listFiles returns the regular files under dir, relative, sorted.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
