package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// units are the systemd units in packaging/, shipped by the tarball as
// they are and by the .deb pointed at /usr/bin/burner.
var units = []string{"burner.service", "burner-backup.service", "burner-backup.timer"}

// debDescription is the package's description: a synopsis, then the
// lines of the long description (deb-control(5)).
var debDescription = []string{
	"disposable-inbox appliance: SMTP in, REST API out",
	"burner receives mail over SMTP for its inbox domains, keeps it in one",
	"bbolt file or in a PostgreSQL database that several nodes share, and",
	"serves it through a REST API, MCP and a web UI.",
}

// debFile is one file of the package: where it goes, its bytes and its
// mode. Every file is root's.
type debFile struct {
	dst  string // absolute, as installed
	data []byte
	mode int64
}

// writeDeb writes the Debian package of linux/arch to path (deb(5)): the
// binary bin at /usr/bin/burner, the units, the sysusers.d entry, the
// conffile /etc/burner/burner.toml and the maintainer scripts of
// packaging/deb/ (the user, /var/lib/burner, the service's life cycle).
// It is an ar archive of three members, written here as the tarball is,
// so that the release needs nothing but Go: debian-binary, control.tar.gz
// (control, md5sums, conffiles, scripts) and data.tar.gz (the files under
// their directories, sorted, root's, stamped with opts.Epoch).
func writeDeb(path string, opts options, bin, arch string) error {
	pkg := filepath.Join(opts.Src, "packaging")
	read := func(src, dst string, mode int64) (debFile, error) {
		b, err := os.ReadFile(src)
		return debFile{dst, b, mode}, err
	}
	var files []debFile
	for _, f := range []struct {
		src, dst string
		mode     int64
	}{
		{bin, "/usr/bin/burner", 0o755},
		{filepath.Join(pkg, "deb", "sysusers.conf"), "/usr/lib/sysusers.d/burner.conf", 0o644},
		{filepath.Join(opts.Src, "README.md"), "/usr/share/doc/burner/README.md", 0o644},
		{filepath.Join(opts.Src, "config.example.toml"), "/usr/share/doc/burner/config.example.toml", 0o644},
		{filepath.Join(opts.Src, "LICENSE"), "/usr/share/doc/burner/copyright", 0o644},
		// The operator's edits survive upgrades: a conffile (below). The
		// postinst gives it to root:burner.
		{filepath.Join(pkg, "deb", "burner.toml"), "/etc/burner/burner.toml", 0o640},
	} {
		df, err := read(f.src, f.dst, f.mode)
		if err != nil {
			return err
		}
		files = append(files, df)
	}
	for _, u := range units {
		df, err := read(filepath.Join(pkg, u), "/lib/systemd/system/"+u, 0o644)
		if err != nil {
			return err
		}
		df.data = debUnit(df.data)
		files = append(files, df)
	}
	data, md5sums, size, err := debData(files, opts.Epoch)
	if err != nil {
		return fmt.Errorf("data.tar.gz: %w", err)
	}
	control := fmt.Sprintf("Package: burner\nVersion: %s\nSection: mail\nPriority: optional\nArchitecture: %s\n"+
		"Maintainer: The burner authors <burner@localhost>\nInstalled-Size: %d\nDescription: %s\n",
		opts.Version, arch, size/1024, strings.Join(debDescription, "\n "))
	meta := []debFile{
		{"control", []byte(control), 0o644},
		{"md5sums", md5sums, 0o644},
		{"conffiles", []byte("/etc/burner/burner.toml\n"), 0o644},
	}
	for _, s := range []string{"postinst", "postrm", "prerm"} {
		df, err := read(filepath.Join(pkg, "deb", s), s, 0o755)
		if err != nil {
			return err
		}
		meta = append(meta, df)
	}
	ctl, err := debControl(meta, opts.Epoch)
	if err != nil {
		return fmt.Errorf("control.tar.gz: %w", err)
	}
	var deb bytes.Buffer
	deb.WriteString("!<arch>\n")
	for _, m := range []struct {
		name string
		data []byte
	}{{"debian-binary", []byte("2.0\n")}, {"control.tar.gz", ctl}, {"data.tar.gz", data}} {
		// ar(5)'s member header: name, time, owner, group, mode, size;
		// the data padded to an even length.
		fmt.Fprintf(&deb, "%-16s%-12d%-6d%-6d%-8o%-10d`\n", m.name, opts.Epoch.Unix(), 0, 0, 0o100644, len(m.data))
		deb.Write(m.data)
		if len(m.data)%2 == 1 {
			deb.WriteByte('\n')
		}
	}
	return writeFile(path, deb.Bytes(), 0o644)
}

// debData returns data.tar.gz of files, with a directory entry for each
// directory above them, its md5sums file and the size of the files.
func debData(files []debFile, epoch time.Time) (tgz, md5sums []byte, size int64, err error) {
	entries := map[string]*debFile{}
	for i, f := range files {
		entries["."+f.dst] = &files[i]
		for d := path.Dir(f.dst); d != "/"; d = path.Dir(d) {
			entries["."+d+"/"] = nil
		}
	}
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names) // a directory comes before what it holds
	var (
		tars []tarItem
		sums strings.Builder
	)
	for _, name := range names {
		h := &tar.Header{Name: name, ModTime: epoch, Uname: "root", Gname: "root", Format: tar.FormatGNU}
		f := entries[name]
		if f == nil {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
			tars = append(tars, tarItem{h: h})
			continue
		}
		h.Typeflag, h.Mode = tar.TypeReg, f.mode
		tars = append(tars, tarItem{h, f.data})
		fmt.Fprintf(&sums, "%x  %s\n", md5.Sum(f.data), strings.TrimPrefix(name, "./"))
		size += int64(len(f.data))
	}
	tgz, err = tarGz(tars, gzip.BestCompression)
	if err != nil {
		return nil, nil, 0, err
	}
	return tgz, []byte(sums.String()), size, nil
}

// debControl returns control.tar.gz of files (named without a directory),
// in their order.
func debControl(files []debFile, epoch time.Time) ([]byte, error) {
	tars := make([]tarItem, len(files))
	for i, f := range files {
		tars[i] = tarItem{&tar.Header{Name: "./" + f.dst, Mode: f.mode, ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatGNU}, f.data}
	}
	return tarGz(tars, gzip.DefaultCompression)
}

// debUnit rewrites a unit of packaging/ for the package: the binary is
// /usr/bin/burner, and the leading comment, which tells how to install
// the unit by hand, gives way to one on changing it.
func debUnit(b []byte) []byte {
	s := strings.ReplaceAll(string(b), "/usr/local/bin/burner", "/usr/bin/burner")
	for strings.HasPrefix(s, "#") {
		_, rest, _ := strings.Cut(s, "\n")
		s = rest
	}
	return []byte("# Installed by the burner package. Change it with `systemctl edit`, which\n# writes an override that upgrades keep.\n" + s)
}
