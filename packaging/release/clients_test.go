package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestClientVersions(t *testing.T) {
	for _, c := range []struct{ in, npm, py string }{
		{"1.2.3", "1.2.3", "1.2.3"},
		{"0.0.0", "0.0.0", "0.0.0"},
		{"10.20.30", "10.20.30", "10.20.30"},
		{"1.2.3~rc1", "1.2.3-rc.1", "1.2.3rc1"},
		{"1.2.3-rc.2", "1.2.3-rc.2", "1.2.3rc2"},
		{"1.2.3rc3", "1.2.3-rc.3", "1.2.3rc3"},
		{"1.2.3~alpha1", "1.2.3-alpha.1", "1.2.3a1"},
		{"1.2.3~b2", "1.2.3-beta.2", "1.2.3b2"},
	} {
		npm, py, err := clientVersions(c.in)
		if err != nil || npm != c.npm || py != c.py {
			t.Errorf("clientVersions(%q) = %q, %q, %v; want %q, %q", c.in, npm, py, err, c.npm, c.py)
		}
	}
	for _, bad := range []string{"1.2", "1.2.3.4", "01.2.3", "1.2.3+deb1", "1.2.3~dev1", "1.2.3-rc", "1.2.3~rc01"} {
		if _, _, err := clientVersions(bad); err == nil || !strings.Contains(err.Error(), "--version") {
			t.Errorf("clientVersions(%q): %v; want an error about --version", bad, err)
		}
	}
}

func TestParsePyproject(t *testing.T) {
	doc, err := parsePyproject(`# a comment
[build-system]
requires = ["setuptools>=61"]  # trailing
build-backend = "setuptools.build_meta"

[project]
name = "x"
description = "a \"quoted\" \\ \u00e9 word"
license = {text = "MIT", extra = "y"}
classifiers = [
    "A :: B",  # one
    "C",
]
empty = []

[project.entry-points.pytest11]
burner = "x.plugin"
`)
	if err != nil {
		t.Fatal(err)
	}
	want := pyproject{
		"":                              {},
		"build-system":                  {"requires": []any{"setuptools>=61"}, "build-backend": "setuptools.build_meta"},
		"project":                       {"name": "x", "description": `a "quoted" \ é word`, "license": map[string]any{"text": "MIT", "extra": "y"}, "classifiers": []any{"A :: B", "C"}, "empty": []any{}},
		"project.entry-points.pytest11": {"burner": "x.plugin"},
	}
	if got, _ := json.Marshal(doc); !bytes.Equal(got, mustJSON(t, want)) {
		t.Errorf("parsePyproject =\n%s\nwant\n%s", got, mustJSON(t, want))
	}
	for _, bad := range []string{
		"version = 1\n",
		"a.b = \"x\"\n",
		"x = \"no end\n",
		"x = \"\"\"multi\"\"\"\n",
		"[[array]]\n",
		"x = [\"a\" \"b\"]\n",
		"x = \"a\" y\n",
		"x = \"a\"\nx = \"b\"\n",
	} {
		if _, err := parsePyproject(bad); err == nil || !strings.Contains(err.Error(), "pyproject.toml line") {
			t.Errorf("parsePyproject(%q): %v; want an error naming the line", bad, err)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClientLicenses: each client carries burner's LICENSE, which its
// packages ship (npm and setuptools take a LICENSE beside the manifest).
func TestClientLicenses(t *testing.T) {
	src := srcDir(t)
	want := readFile(t, filepath.Join(src, "LICENSE"))
	for _, c := range []string{"clients/js/LICENSE", "clients/python/LICENSE"} {
		if got := readFile(t, filepath.Join(src, c)); !bytes.Equal(got, want) {
			t.Errorf("%s differs from LICENSE: copy it again", c)
		}
	}
}

// srcDir is the source tree the release is built from.
func srcDir(t *testing.T) string {
	t.Helper()
	src, err := moduleDir(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestClientPackages opens the client packages of a release and checks
// what they hold: names, times, modes, the stamped versions, and RECORD
// against the wheel's files.
func TestClientPackages(t *testing.T) {
	dir := sharedRelease(t, "1.2.3")

	// npm: package/..., files only, as npm pack makes it.
	npm := readTarball(t, filepath.Join(dir, "burner-client-1.2.3.tgz"))
	var names []string
	for _, e := range npm {
		names = append(names, e.hdr.Name)
		if e.hdr.Typeflag != tar.TypeReg || e.hdr.Mode != 0o644 || !e.hdr.ModTime.Equal(testEpoch) || e.hdr.Uid != 0 || e.hdr.Uname != "" {
			t.Errorf("burner-client-1.2.3.tgz: %s is type %c, mode %o, dated %s, owned by %d %q; want a 0644 file of uid 0 dated %s",
				e.hdr.Name, e.hdr.Typeflag, e.hdr.Mode, e.hdr.ModTime, e.hdr.Uid, e.hdr.Uname, testEpoch)
		}
		if e.hdr.Name == "package/package.json" {
			var pkg struct{ Name, Version string }
			if err := json.Unmarshal(e.data, &pkg); err != nil || pkg.Name != "burner-client" || pkg.Version != "1.2.3" {
				t.Errorf("package/package.json names %s@%s (%v), want burner-client@1.2.3", pkg.Name, pkg.Version, err)
			}
		}
	}
	for _, want := range []string{"package/package.json", "package/README.md", "package/LICENSE", "package/dist/index.js", "package/dist/index.d.ts", "package/dist/playwright.js", "package/src/index.ts"} {
		if !slices.Contains(names, want) {
			t.Errorf("burner-client-1.2.3.tgz lacks %s; it holds %q", want, names)
		}
	}
	for _, n := range names {
		if strings.Contains(n, "node_modules") || strings.Contains(n, "/test/") || strings.HasSuffix(n, "package-lock.json") {
			t.Errorf("burner-client-1.2.3.tgz holds %s, which npm pack leaves out", n)
		}
	}

	// The wheel: RECORD lists every other file with its hash and size.
	whl := readZip(t, filepath.Join(dir, "burner_client-1.2.3-py3-none-any.whl"))
	const info = "burner_client-1.2.3.dist-info/"
	record, err := csv.NewReader(bytes.NewReader(whl.files[info+"RECORD"])).ReadAll()
	if err != nil {
		t.Fatalf("RECORD: %v", err)
	}
	listed := map[string]bool{}
	for _, r := range record {
		listed[r[0]] = true
		if r[0] == info+"RECORD" {
			if r[1] != "" || r[2] != "" {
				t.Errorf("RECORD lists itself with %q %q, want no hash and no size", r[1], r[2])
			}
			continue
		}
		data, ok := whl.files[r[0]]
		if !ok {
			t.Errorf("RECORD lists %s, which the wheel lacks", r[0])
		} else if r[1] != recordHash(data) || r[2] != fmt.Sprint(len(data)) {
			t.Errorf("RECORD gives %s as %s %s, the file is %s %d", r[0], r[1], r[2], recordHash(data), len(data))
		}
	}
	for _, name := range whl.order {
		if !listed[name] {
			t.Errorf("the wheel holds %s, which RECORD does not list", name)
		}
		if whl.mode[name] != 0o644 || !whl.modified[name].Equal(testEpoch) {
			t.Errorf("the wheel's %s has mode %o and time %s, want 0644 and %s", name, whl.mode[name], whl.modified[name], testEpoch)
		}
	}
	if last := whl.order[len(whl.order)-1]; last != info+"RECORD" {
		t.Errorf("the wheel ends with %s, want RECORD last", last)
	}
	meta := string(whl.files[info+"METADATA"])
	for _, line := range []string{"Metadata-Version: 2.1\n", "Name: burner-client\n", "Version: 1.2.3\n", "Requires-Python: >=3.9\n", "License-File: LICENSE\n"} {
		if !strings.Contains(meta, line) {
			t.Errorf("METADATA lacks %q:\n%s", line, meta)
		}
	}
	if got := string(whl.files[info+"entry_points.txt"]); got != "[pytest11]\nburner = burner_client.pytest_plugin\n" {
		t.Errorf("entry_points.txt = %q, want the pytest plugin", got)
	}
	if init := string(whl.files["burner_client/__init__.py"]); !strings.Contains(init, "\n__version__ = \"1.2.3\"\n") {
		t.Errorf("burner_client/__init__.py in the wheel does not say __version__ = \"1.2.3\"")
	}

	// The sdist: its PKG-INFO is the wheel's METADATA, of version 2.2.
	sdist := map[string][]byte{}
	for _, e := range readTarball(t, filepath.Join(dir, "burner_client-1.2.3.tar.gz")) {
		sdist[e.hdr.Name] = e.data
		if !e.hdr.ModTime.Equal(testEpoch) {
			t.Errorf("burner_client-1.2.3.tar.gz: %s is dated %s, want %s", e.hdr.Name, e.hdr.ModTime, testEpoch)
		}
	}
	if got, want := string(sdist["burner_client-1.2.3/PKG-INFO"]), strings.Replace(meta, "Metadata-Version: 2.1", "Metadata-Version: 2.2", 1); got != want {
		t.Errorf("the sdist's PKG-INFO is not the wheel's METADATA:\n%s", got)
	}
	if !bytes.Contains(sdist["burner_client-1.2.3/pyproject.toml"], []byte("\nversion = \"1.2.3\"\n")) {
		t.Errorf("the sdist's pyproject.toml does not say version = \"1.2.3\"")
	}
	for name, data := range whl.files {
		if !strings.HasPrefix(name, info) && !bytes.Equal(sdist["burner_client-1.2.3/src/"+name], data) {
			t.Errorf("the sdist's src/%s differs from the wheel's %s", name, name)
		}
	}
}

type zipContents struct {
	order    []string
	files    map[string][]byte
	mode     map[string]os.FileMode
	modified map[string]time.Time
}

func readZip(t *testing.T, path string) zipContents {
	t.Helper()
	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer r.Close()
	z := zipContents{files: map[string][]byte{}, mode: map[string]os.FileMode{}, modified: map[string]time.Time{}}
	for _, f := range r.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%s: %s: %v", path, f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %s: %v", path, f.Name, err)
		}
		z.order = append(z.order, f.Name)
		z.files[f.Name] = b
		z.mode[f.Name] = f.Mode().Perm()
		z.modified[f.Name] = f.Modified.UTC()
	}
	return z
}

// python3 is the Python of the client tests: the system's, as .ci/run
// installs it with Debian's packages, else the first on PATH.
var python3 = func() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}()

// clientTools skips t unless the tools of the client tests are here;
// under CI=true it fails instead (.ci/run installs them).
func clientTools(t *testing.T, tools ...string) {
	t.Helper()
	stop := t.Skipf
	if os.Getenv("CI") == "true" {
		stop = t.Fatalf
	}
	for _, tool := range tools {
		if tool == "python3" {
			tool = python3
		}
		if _, err := exec.LookPath(tool); err != nil {
			stop("%s is not installed (.ci/run installs it)", tool)
		}
	}
	if slices.Contains(tools, "python3") {
		probe := exec.Command(python3, "-c", "import setuptools, wheel, pytest, venv, pip")
		if out, err := probe.CombinedOutput(); err != nil {
			stop("python3 lacks venv, pip, setuptools, wheel or pytest (Debian: python3-venv python3-pip python3-setuptools python3-wheel python3-pytest): %v\n%s", err, out)
		}
	}
}

// runIn runs a command in dir with env added, within 3 minutes, and
// returns its output; it fails t when the command fails.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestNPMPackageAsNpmPacks packs clients/js with npm itself and wants the
// release's package to hold the same files with the same bytes, but for
// package.json's version.
func TestNPMPackageAsNpmPacks(t *testing.T) {
	clientTools(t, "npm")
	dir := sharedRelease(t, "1.2.3")
	out := t.TempDir()
	// --ignore-scripts: dist/ is committed; nothing is to be built.
	runIn(t, filepath.Join(srcDir(t), "clients", "js"), nil, "npm", "pack", "--ignore-scripts", "--pack-destination", out)
	packed, _ := filepath.Glob(filepath.Join(out, "burner-client-*.tgz"))
	if len(packed) != 1 {
		t.Fatalf("npm pack wrote %q, want one burner-client-*.tgz", packed)
	}
	want := tarFiles(t, packed[0])
	got := tarFiles(t, filepath.Join(dir, "burner-client-1.2.3.tgz"))
	if a, b := sortedKeys(got), sortedKeys(want); strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("the release's npm package holds\n%s\nnpm pack's\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	for name, data := range want {
		if name == "package/package.json" {
			data = packageVersion.ReplaceAll(data, []byte(`  "version": "1.2.3",`))
		}
		if !bytes.Equal(got[name], data) {
			t.Errorf("%s differs between the release's npm package and npm pack's", name)
		}
	}
}

func tarFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, e := range readTarball(t, path) {
		m[e.hdr.Name] = e.data
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestWheelAsSetuptoolsBuilds builds a wheel with setuptools (pip, offline,
// with the machine's setuptools) from the release's sdist, and wants the
// release's wheel to hold the same files with the same bytes, but for the
// generator's name in WHEEL and so RECORD.
func TestWheelAsSetuptoolsBuilds(t *testing.T) {
	clientTools(t, "python3")
	dir := sharedRelease(t, "1.2.3")
	work := t.TempDir()
	runIn(t, work, nil, "tar", "xzf", filepath.Join(dir, "burner_client-1.2.3.tar.gz"))
	runIn(t, work, nil, python3, "-m", "pip", "wheel", "--no-index", "--no-deps", "--no-build-isolation",
		"--wheel-dir", filepath.Join(work, "out"), filepath.Join(work, "burner_client-1.2.3"))
	want := readZip(t, filepath.Join(work, "out", "burner_client-1.2.3-py3-none-any.whl"))
	got := readZip(t, filepath.Join(dir, "burner_client-1.2.3-py3-none-any.whl"))
	if a, b := sortedKeys(got.files), sortedKeys(want.files); strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("the release's wheel holds\n%s\nsetuptools'\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	const info = "burner_client-1.2.3.dist-info/"
	generator := regexp.MustCompile(`(?m)^Generator: .*$`)
	for name, data := range want.files {
		switch name {
		case info + "RECORD":
			continue // hashes WHEEL
		case info + "WHEEL":
			data = generator.ReplaceAll(data, []byte("Generator: burner-release"))
		}
		if !bytes.Equal(got.files[name], data) {
			t.Errorf("%s differs between the release's wheel and setuptools':\n%s\nsetuptools:\n%s", name, got.files[name], data)
		}
	}
}

// TestClientsInstalled installs each client each way a user may, into
// clean directories, and reads a mail with it from a real burner serve,
// the release's own binary: the wheel with pip --no-index, the sdist and
// the checkout's clients/python with pip (with the machine's setuptools,
// as PyPI is out of reach), the npm package and the checkout's clients/js
// with npm install, both offline. The wheel's pytest plugin then runs a
// user's test with a scoped, read-only key.
func TestClientsInstalled(t *testing.T) {
	clientTools(t, "python3", "npm", "tar")
	dir := sharedRelease(t, "1.2.3")
	src := srcDir(t)
	work := t.TempDir()

	// burner serve, from the release's tarball of this machine.
	prefix := "burner_1.2.3_linux_" + runtime.GOARCH + "/"
	runIn(t, work, nil, "tar", "xzf", filepath.Join(dir, "burner_1.2.3_linux_"+runtime.GOARCH+".tar.gz"), prefix+"burner")
	bin := filepath.Join(work, prefix, "burner")
	data := filepath.Join(work, "burner.db")
	key := func(name string, scope ...string) string {
		out := runIn(t, work, nil, bin, append([]string{"keys", "create", "--name", name, "--data", data}, scope...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	full, ro := key("ci"), key("agent", "--inbox", "team-*", "--read-only")
	srv := startServer(t, nil, bin, "serve", "--data", data, "--smtp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--domain", "inbox.test")
	deliver(t, srv.smtp, "release@inbox.test", "from the release")
	env := []string{"BURNER_URL=http://" + srv.http, "BURNER_KEY=" + full}

	// What each installed client reads: the key's name, the mail's
	// subject and the client's version.
	want := func(how, out, version string) {
		t.Helper()
		var got struct{ Key, Subject, Version string }
		if err := json.Unmarshal([]byte(lastLine(out)), &got); err != nil || got.Key != "ci" || got.Subject != "from the release" || got.Version != version {
			t.Errorf("%s: the client read %q (%v); want the key ci, the subject \"from the release\" and version %s", how, out, err, version)
		}
	}
	const pyScript = `import json, os, burner_client
b = burner_client.Burner(os.environ["BURNER_URL"], os.environ["BURNER_KEY"])
mail = b.wait_for_email("release", timeout=30)
print(json.dumps({"key": b.info().key.name, "subject": mail.subject, "version": burner_client.__version__}))
`
	// --without-pip --system-site-packages: the machine's pip, setuptools
	// and pytest serve the venv; what pip installs goes into it.
	venv := func(name string) string {
		d := filepath.Join(work, name)
		runIn(t, work, nil, python3, "-m", "venv", "--without-pip", "--system-site-packages", d)
		return filepath.Join(d, "bin", "python")
	}
	pyCopy := filepath.Join(work, "python-checkout") // pip builds in the tree: not in the checkout's
	runIn(t, work, nil, "cp", "-r", filepath.Join(src, "clients", "python"), pyCopy)
	for _, c := range []struct{ how, venv, what, version string }{
		{"pip install --no-index the wheel", "venv-wheel", filepath.Join(dir, "burner_client-1.2.3-py3-none-any.whl"), "1.2.3"},
		{"pip install the sdist", "venv-sdist", filepath.Join(dir, "burner_client-1.2.3.tar.gz"), "1.2.3"},
		{"pip install ./clients/python", "venv-checkout", pyCopy, "0.1.0"},
	} {
		start := time.Now()
		py := venv(c.venv)
		runIn(t, work, nil, py, "-m", "pip", "install", "--no-index", "--no-build-isolation", c.what)
		want(c.how, runIn(t, work, env, py, "-c", pyScript), c.version)
		t.Logf("%s, then a mail read: %s", c.how, time.Since(start).Round(time.Millisecond))
	}

	// The wheel's pytest plugin (by its entry point) with a scoped,
	// read-only key: the inbox inside team-*, no clean-up.
	suite := filepath.Join(work, "suite")
	if err := os.MkdirAll(suite, 0o755); err != nil {
		t.Fatal(err)
	}
	test := `import os, smtplib
from email.message import EmailMessage

def test_signup(inbox):
    assert inbox.address.startswith("team-pytest-") and inbox.address.endswith("@inbox.test"), inbox.address
    open(os.environ["ADDRESS_FILE"], "w").write(inbox.to)
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "shop@example.test", inbox.address, "Confirm"
    msg.set_content("Your code is 734019.")
    host, port = os.environ["SMTP"].rsplit(":", 1)
    with smtplib.SMTP(host, int(port), timeout=30) as s:
        s.send_message(msg)
    assert inbox.codes(inbox.wait_for_email("Confirm", timeout=30).id) == ["734019"]
`
	if err := os.WriteFile(filepath.Join(suite, "test_signup.py"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	addressFile := filepath.Join(work, "address")
	py := filepath.Join(work, "venv-wheel", "bin", "python")
	out := runIn(t, suite, []string{"BURNER_URL=http://" + srv.http, "BURNER_KEY=" + ro, "SMTP=" + srv.smtp, "ADDRESS_FILE=" + addressFile},
		py, "-m", "pytest", "-p", "no:cacheprovider", "-q", suite)
	if !strings.Contains(out, "1 passed") || regexp.MustCompile(`\d+ error`).MatchString(out) {
		t.Errorf("pytest with the wheel's plugin and a scoped read-only key:\n%s", out)
	}
	readMail(t, srv.http, full, strings.TrimSpace(string(readFile(t, addressFile))), "Confirm") // not cleared

	const jsScript = `import { Burner } from "burner-client";
import { readFileSync } from "node:fs";
const b = new Burner({ url: process.env.BURNER_URL, key: process.env.BURNER_KEY });
const mail = await b.waitForEmail({ to: "release", timeout: 30 });
const pkg = JSON.parse(readFileSync("node_modules/burner-client/package.json", "utf8"));
console.log(JSON.stringify({ key: (await b.info()).key.name, subject: mail.subject, version: pkg.version }));
`
	for i, c := range []struct {
		how, version string
		args         []string
	}{
		{"npm install the package", "1.2.3", []string{filepath.Join(dir, "burner-client-1.2.3.tgz")}},
		{"npm install ./clients/js", "0.1.0", []string{filepath.Join(src, "clients", "js")}},
		{"npm install --install-links ./clients/js", "0.1.0", []string{"--install-links", filepath.Join(src, "clients", "js")}},
	} {
		start := time.Now()
		d := filepath.Join(work, fmt.Sprintf("npm-%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "package.json"), []byte(`{"name": "app", "private": true, "type": "module"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "read.js"), []byte(jsScript), 0o644); err != nil {
			t.Fatal(err)
		}
		// --offline: the package has no dependencies, so nothing is fetched.
		runIn(t, d, nil, "npm", append([]string{"install", "--offline", "--no-audit", "--no-fund"}, c.args...)...)
		want(c.how, runIn(t, d, env, "node", "read.js"), c.version)
		t.Logf("%s, then a mail read: %s", c.how, time.Since(start).Round(time.Millisecond))
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
