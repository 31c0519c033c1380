package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// The client libraries as packages: the npm package of clients/js as
// `npm pack` makes it, and the wheel and sdist of clients/python as
// setuptools makes them, each written here with nothing but Go, so that
// the release needs neither node nor Python, nor a network (setuptools
// would come from PyPI), and is as reproducible as the rest.

// clientVersion is the release's version as SemVer (npm) and PEP 440
// (Python) read it: 1.2.3, or a pre-release 1.2.3~rc1 (Debian's spelling,
// which sorts before 1.2.3), 1.2.3-rc.1 or 1.2.3rc1, with a, alpha, b, beta
// or rc.
var clientVersion = regexp.MustCompile(`^((?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*))(?:[~-]?(a|alpha|b|beta|rc)\.?(0|[1-9][0-9]*))?$`)

// clientVersions returns version as npm and Python spell it, or an error
// for a version neither can.
func clientVersions(version string) (npm, py string, err error) {
	m := clientVersion.FindStringSubmatch(version)
	if m == nil {
		return "", "", fmt.Errorf("--version %q: the client packages need a version such as 1.2.3 or 1.2.3~rc1 (npm and Python read no other)", version)
	}
	if m[2] == "" {
		return m[1], m[1], nil
	}
	pre := map[string]string{"a": "a", "alpha": "a", "b": "b", "beta": "b", "rc": "rc"}[m[2]]
	long := map[string]string{"a": "alpha", "b": "beta", "rc": "rc"}[pre]
	return m[1] + "-" + long + "." + m[3], m[1] + pre + m[3], nil
}

// clientFile is one file of a client package: its path inside and its
// bytes.
type clientFile struct {
	name string
	data []byte
	exec bool
}

// writeClientPackages writes the client packages of opts into opts.Out
// and returns their names.
func writeClientPackages(opts options) ([]string, error) {
	npmName := "burner-client-" + opts.NPMVersion + ".tgz"
	if err := writeNPMPackage(filepath.Join(opts.Out, npmName), opts); err != nil {
		return nil, fmt.Errorf("%s: %w", npmName, err)
	}
	py, err := loadPyPackage(filepath.Join(opts.Src, "clients", "python"), opts.PyVersion)
	if err != nil {
		return nil, err
	}
	wheel := py.dist + "-" + opts.PyVersion + "-py3-none-any.whl"
	if err := writeWheel(filepath.Join(opts.Out, wheel), opts, py); err != nil {
		return nil, fmt.Errorf("%s: %w", wheel, err)
	}
	sdist := py.dist + "-" + opts.PyVersion + ".tar.gz"
	if err := writeSdist(filepath.Join(opts.Out, sdist), opts, py); err != nil {
		return nil, fmt.Errorf("%s: %w", sdist, err)
	}
	return []string{npmName, wheel, sdist}, nil
}

// stamp replaces the one match of re in data with repl, or fails: a file
// whose version line moved must not ship with the old version.
func stamp(name string, data []byte, re *regexp.Regexp, repl string) ([]byte, error) {
	if n := len(re.FindAllIndex(data, -1)); n != 1 {
		return nil, fmt.Errorf("%s: %d lines match %s, want one to stamp the version in", name, n, re)
	}
	return re.ReplaceAllLiteral(data, []byte(repl)), nil
}

// npmIgnored are names npm leaves out of every package, wherever they are.
var npmIgnored = []string{".git", ".svn", ".hg", "CVS", "node_modules", ".DS_Store", ".npmrc", "npm-debug.log", ".lock-wscript", "config.gypi", "*.orig", ".*.swp", "._*"}

// npmFiles returns what `npm pack` puts in the package of dir: package.json,
// the README and the LICENSE, and every file under the paths of its
// "files" (which the release takes as plain paths, not globs), sorted.
func npmFiles(dir string, files []string) ([]string, error) {
	set := map[string]bool{"package.json": true}
	root, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range root {
		base := strings.ToUpper(strings.TrimSuffix(e.Name(), path.Ext(e.Name())))
		if e.Type().IsRegular() && (base == "README" || base == "LICENSE" || base == "LICENCE") {
			set[e.Name()] = true
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("package.json has no \"files\": the release packs only what it lists")
	}
	for _, f := range files {
		if strings.ContainsAny(f, "*?[]{}!") {
			return nil, fmt.Errorf("package.json: \"files\" entry %q: the release takes plain paths, not patterns", f)
		}
		start := filepath.Join(dir, filepath.FromSlash(path.Clean(strings.TrimPrefix(f, "/"))))
		err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			for _, pat := range npmIgnored {
				if ok, _ := path.Match(pat, d.Name()); ok {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
			}
			if d.Type().IsRegular() {
				rel, err := filepath.Rel(dir, p)
				set[filepath.ToSlash(rel)] = true
				return err
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("package.json: \"files\" entry %q: %w", f, err)
		}
	}
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// packageVersion is the version line of package.json, as npm writes it.
var packageVersion = regexp.MustCompile(`(?m)^  "version": "[^"]*",$`)

// writeNPMPackage writes the npm package of clients/js to path, as `npm
// pack` makes it: a gzipped tar of package/<file>, files only, owned by
// root, 0644 (0755 when executable), with package.json's version the
// release's. Its build, dist/, is committed (clients/js/test/dist.test.js
// keeps it current), so the package needs no TypeScript here.
func writeNPMPackage(dst string, opts options) error {
	dir := filepath.Join(opts.Src, "clients", "js")
	manifest, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return err
	}
	manifest, err = stamp("package.json", manifest, packageVersion, `  "version": "`+opts.NPMVersion+`",`)
	if err != nil {
		return err
	}
	var pkg struct {
		Name    string   `json:"name"`
		Version string   `json:"version"`
		Files   []string `json:"files"`
	}
	if err := json.Unmarshal(manifest, &pkg); err != nil {
		return fmt.Errorf("package.json: %w", err)
	}
	if pkg.Name != "burner-client" || pkg.Version != opts.NPMVersion {
		return fmt.Errorf("package.json names %s@%s after stamping, want burner-client@%s", pkg.Name, pkg.Version, opts.NPMVersion)
	}
	names, err := npmFiles(dir, pkg.Files)
	if err != nil {
		return err
	}
	var files []clientFile
	for _, name := range names {
		f := clientFile{name: "package/" + name, data: manifest}
		if name != "package.json" {
			if f, err = readClientFile(dir, name, "package/"+name); err != nil {
				return err
			}
		}
		files = append(files, f)
	}
	return writeClientTar(dst, opts.Epoch, files)
}

// readClientFile reads dir/name as the file called as inside a package.
func readClientFile(dir, name, as string) (clientFile, error) {
	p := filepath.Join(dir, filepath.FromSlash(name))
	b, err := os.ReadFile(p)
	if err != nil {
		return clientFile{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return clientFile{}, err
	}
	return clientFile{name: as, data: b, exec: fi.Mode()&0o111 != 0}, nil
}

// writeClientTar writes files as a gzipped tar at dst, in their order,
// files only, as npm and sdists have them.
func writeClientTar(dst string, epoch time.Time, files []clientFile) error {
	tars := make([]tarItem, len(files))
	for i, f := range files {
		mode := int64(0o644)
		if f.exec {
			mode = 0o755
		}
		tars[i] = tarItem{&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: mode, ModTime: epoch, Format: tar.FormatPAX}, f.data}
	}
	tgz, err := tarGz(tars, gzip.BestCompression)
	if err != nil {
		return err
	}
	return writeFile(dst, tgz, 0o644)
}

// pyPackage is clients/python as its pyproject.toml describes it, with
// the release's version stamped in.
type pyPackage struct {
	dir       string
	name      string // the project's name, burner-client
	dist      string // its name in file names, burner_client
	version   string
	pyproject []byte       // stamped
	metadata  string       // the core metadata's fields, without Metadata-Version
	entry     string       // entry_points.txt; "" without entry points
	top       []string     // the top-level packages
	src       string       // where they are, relative to dir ([tool.setuptools.packages.find] where)
	files     []clientFile // the packages' files, by path inside the wheel
	license   []clientFile // LICENSE files, by name
	readme    string       // the README's name
}

var (
	pyprojectVersion = regexp.MustCompile(`(?m)^version = "[^"]*"$`)
	moduleVersion    = regexp.MustCompile(`(?m)^__version__ = "[^"]*"$`)
	distNameRun      = regexp.MustCompile(`[-_.]+`)
)

// loadPyPackage reads the package of dir (clients/python) as setuptools
// would build it: the [project] table for the metadata and entry points,
// [tool.setuptools.packages.find] where for the packages (their *.py
// files, and the files [tool.setuptools.package-data] names). What the
// release does not read is an error, not a silent difference from
// `pip install ./clients/python`.
func loadPyPackage(dir, version string) (*pyPackage, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	if err != nil {
		return nil, err
	}
	stamped, err := stamp("pyproject.toml", raw, pyprojectVersion, `version = "`+version+`"`)
	if err != nil {
		return nil, err
	}
	doc, err := parsePyproject(string(stamped))
	if err != nil {
		return nil, err
	}
	if backend, _ := doc.str("build-system", "build-backend"); backend != "setuptools.build_meta" {
		return nil, fmt.Errorf("pyproject.toml: build-backend %q: the release writes what setuptools.build_meta would", backend)
	}
	known := map[string]bool{"name": true, "version": true, "description": true, "readme": true, "license": true,
		"requires-python": true, "dependencies": true, "classifiers": true, "entry-points": true}
	for key := range doc["project"] {
		if !known[key] {
			return nil, fmt.Errorf("pyproject.toml: [project] %s: the release does not write it into the metadata yet", key)
		}
	}
	for table := range doc {
		if strings.HasPrefix(table, "project.") && !strings.HasPrefix(table, "project.entry-points.") {
			return nil, fmt.Errorf("pyproject.toml: [%s]: the release does not read it yet", table)
		}
	}
	p := &pyPackage{dir: dir, version: version, pyproject: stamped}
	if p.name, err = doc.str("project", "name"); err != nil {
		return nil, err
	}
	p.dist = strings.ToLower(distNameRun.ReplaceAllString(p.name, "_"))
	if v, err := doc.str("project", "version"); err != nil || v != version {
		return nil, fmt.Errorf("pyproject.toml: version %q after stamping, want %q (%v)", v, version, err)
	}
	summary, err := doc.str("project", "description")
	if err != nil {
		return nil, err
	}
	if p.readme, err = doc.str("project", "readme"); err != nil || !strings.HasSuffix(p.readme, ".md") {
		return nil, fmt.Errorf("pyproject.toml: readme %q: want a Markdown file's name (%v)", p.readme, err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, p.readme))
	if err != nil {
		return nil, err
	}
	license, _ := doc["project"]["license"].(map[string]any)
	licenseText, ok := license["text"].(string)
	if !ok || len(license) != 1 {
		return nil, fmt.Errorf("pyproject.toml: license: want {text = \"...\"}")
	}
	requires, err := doc.str("project", "requires-python")
	if err != nil {
		return nil, err
	}
	deps, err := doc.strs("project", "dependencies")
	if err != nil {
		return nil, err
	}
	classifiers, err := doc.strs("project", "classifiers")
	if err != nil {
		return nil, err
	}

	// LICENSE files at the top, as setuptools' license_files finds them.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		for _, pat := range []string{"LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*"} {
			if ok, _ := path.Match(pat, e.Name()); ok && e.Type().IsRegular() {
				f, err := readClientFile(dir, e.Name(), e.Name())
				if err != nil {
					return nil, err
				}
				p.license = append(p.license, f)
				break
			}
		}
	}

	// The core metadata (packaging.python.org, "Core metadata
	// specifications"), in setuptools' order of fields.
	var m strings.Builder
	fmt.Fprintf(&m, "Name: %s\nVersion: %s\nSummary: %s\nLicense: %s\n", p.name, version, summary, licenseText)
	for _, c := range classifiers {
		fmt.Fprintf(&m, "Classifier: %s\n", c)
	}
	fmt.Fprintf(&m, "Requires-Python: %s\nDescription-Content-Type: text/markdown\n", requires)
	for _, f := range p.license {
		fmt.Fprintf(&m, "License-File: %s\n", f.name)
	}
	for _, d := range deps {
		fmt.Fprintf(&m, "Requires-Dist: %s\n", d)
	}
	fmt.Fprintf(&m, "\n%s", readme)
	p.metadata = m.String()

	// entry_points.txt, one section per group, as setuptools writes it.
	var groups []string
	for table := range doc {
		if g, ok := strings.CutPrefix(table, "project.entry-points."); ok {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	var ep strings.Builder
	for i, g := range groups {
		if i > 0 {
			ep.WriteString("\n")
		}
		fmt.Fprintf(&ep, "[%s]\n", g)
		names := make([]string, 0, len(doc["project.entry-points."+g]))
		for name := range doc["project.entry-points."+g] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			target, err := doc.str("project.entry-points."+g, name)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&ep, "%s = %s\n", name, target)
		}
	}
	p.entry = ep.String()

	// The packages under where, and their files.
	where, err := doc.strs("tool.setuptools.packages.find", "where")
	if err != nil || len(where) != 1 {
		return nil, fmt.Errorf("pyproject.toml: [tool.setuptools.packages.find] where: want one directory (%v)", err)
	}
	for key := range doc["tool.setuptools.packages.find"] {
		if key != "where" {
			return nil, fmt.Errorf("pyproject.toml: [tool.setuptools.packages.find] %s: the release does not read it yet", key)
		}
	}
	p.src = where[0]
	src := filepath.Join(dir, filepath.FromSlash(where[0]))
	err = filepath.WalkDir(src, func(p2 string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(p2, "__init__.py")); d.Name() == "__pycache__" || (p2 != src && err != nil) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(src, p2)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		pkg := strings.ReplaceAll(path.Dir(rel), "/", ".")
		if pkg == "." {
			return nil // a module beside the packages: setuptools' find takes packages only
		}
		include := strings.HasSuffix(rel, ".py")
		data, err := doc.strs("tool.setuptools.package-data", pkg)
		if err != nil {
			return err
		}
		for _, pat := range data {
			if ok, _ := path.Match(pat, path.Base(rel)); ok {
				include = true
			}
		}
		if !include {
			return nil
		}
		f, err := readClientFile(src, rel, rel)
		if err != nil {
			return err
		}
		if rel == path.Join(strings.Split(rel, "/")[0], "__init__.py") {
			if f.data, err = stamp(rel, f.data, moduleVersion, `__version__ = "`+version+`"`); err != nil {
				return err
			}
		}
		p.files = append(p.files, f)
		if top := strings.Split(rel, "/")[0]; !slices.Contains(p.top, top) {
			p.top = append(p.top, top)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(p.files) == 0 {
		return nil, fmt.Errorf("%s holds no package", src)
	}
	sort.Slice(p.files, func(i, j int) bool { return p.files[i].name < p.files[j].name })
	sort.Strings(p.top)
	return p, nil
}

// recordHash is a file's hash as RECORD gives it: sha256=, then the
// digest in URL-safe base64 without padding (the wheel spec).
func recordHash(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256=" + base64.RawURLEncoding.EncodeToString(h[:])
}

// zipEpoch is the earliest time a zip file can hold (MS-DOS dates start
// in 1980): an older SOURCE_DATE_EPOCH is moved up to it, as Python's
// wheel tools do.
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// writeWheel writes p as a wheel (packaging.python.org, "Binary
// distribution format"): the packages' files, then NAME-VERSION.dist-info
// with METADATA, WHEEL, entry_points.txt, top_level.txt, the LICENSE and
// RECORD, which lists every other file with its hash and size.
func writeWheel(dst string, opts options, p *pyPackage) error {
	info := p.dist + "-" + p.version + ".dist-info/"
	files := append([]clientFile(nil), p.files...)
	files = append(files,
		clientFile{name: info + "METADATA", data: []byte("Metadata-Version: 2.1\n" + p.metadata)},
		clientFile{name: info + "WHEEL", data: []byte("Wheel-Version: 1.0\nGenerator: burner-release\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n")},
	)
	if p.entry != "" {
		files = append(files, clientFile{name: info + "entry_points.txt", data: []byte(p.entry)})
	}
	files = append(files, clientFile{name: info + "top_level.txt", data: []byte(strings.Join(p.top, "\n") + "\n")})
	for _, l := range p.license {
		files = append(files, clientFile{name: info + l.name, data: l.data})
	}
	var record strings.Builder
	for _, f := range files {
		fmt.Fprintf(&record, "%s,%s,%d\n", f.name, recordHash(f.data), len(f.data))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	files = append(files, clientFile{name: info + "RECORD", data: []byte(record.String())})

	mtime := opts.Epoch
	if mtime.Before(zipEpoch) {
		mtime = zipEpoch
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(f.data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return writeFile(dst, buf.Bytes(), 0o644)
}

// writeSdist writes p as a source distribution (packaging.python.org,
// "Source distribution format"): NAME-VERSION/ with PKG-INFO, the stamped
// pyproject.toml, the README, the LICENSE and the packages under their
// source directory; pip builds and installs it with setuptools.
func writeSdist(dst string, opts options, p *pyPackage) error {
	top := p.dist + "-" + p.version + "/"
	files := []clientFile{
		{name: top + "PKG-INFO", data: []byte("Metadata-Version: 2.2\n" + p.metadata)},
		{name: top + "pyproject.toml", data: p.pyproject},
	}
	readme, err := readClientFile(p.dir, p.readme, top+p.readme)
	if err != nil {
		return err
	}
	files = append(files, readme)
	for _, l := range p.license {
		files = append(files, clientFile{name: top + l.name, data: l.data})
	}
	for _, f := range p.files {
		f.name = top + path.Join(p.src, f.name)
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return writeClientTar(dst, opts.Epoch, files)
}
