package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

// units are the systemd units in packaging/, shipped by the tarball as
// they are and by the .deb pointed at /usr/bin/burner.
var units = []string{"burner.service", "burner-backup.service", "burner-backup.timer"}

// writeDeb writes the Debian package of linux/arch to path, with nfpm:
// the binary bin at /usr/bin/burner, the units, the sysusers.d entry, the
// conffile /etc/burner/burner.toml and the maintainer scripts of
// packaging/deb/ (the user, /var/lib/burner, the service's life cycle).
// work is a directory for the files made on the way.
func writeDeb(path string, opts options, bin, arch, work string) error {
	pkg := filepath.Join(opts.Src, "packaging")
	contents := files.Contents{
		file(bin, "/usr/bin/burner", 0o755),
		file(filepath.Join(pkg, "deb", "sysusers.conf"), "/usr/lib/sysusers.d/burner.conf", 0o644),
		file(filepath.Join(opts.Src, "README.md"), "/usr/share/doc/burner/README.md", 0o644),
		file(filepath.Join(opts.Src, "config.example.toml"), "/usr/share/doc/burner/config.example.toml", 0o644),
		file(filepath.Join(opts.Src, "LICENSE"), "/usr/share/doc/burner/copyright", 0o644),
	}
	// The operator's edits survive upgrades: a conffile. The postinst
	// gives it to root:burner.
	conf := file(filepath.Join(pkg, "deb", "burner.toml"), "/etc/burner/burner.toml", 0o640)
	conf.Type = files.TypeConfigNoReplace
	contents = append(contents, conf)
	for _, u := range units {
		b, err := os.ReadFile(filepath.Join(pkg, u))
		if err != nil {
			return err
		}
		dst := filepath.Join(work, u)
		if err := os.WriteFile(dst, debUnit(b), 0o644); err != nil {
			return err
		}
		contents = append(contents, file(dst, "/lib/systemd/system/"+u, 0o644))
	}
	info := &nfpm.Info{
		Name:        "burner",
		Arch:        arch,
		Platform:    "linux",
		Version:     opts.Version,
		Section:     "mail",
		Priority:    "optional",
		Maintainer:  "The burner authors <burner@localhost>",
		Description: "disposable-inbox appliance: SMTP in, REST API out\nburner receives mail over SMTP for its inbox domains, keeps it in one\nbbolt file and serves it through a REST API and a web UI.",
		License:     "MIT",
		MTime:       opts.Epoch,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(pkg, "deb", "postinst"),
				PreRemove:   filepath.Join(pkg, "deb", "prerm"),
				PostRemove:  filepath.Join(pkg, "deb", "postrm"),
			},
			Deb: nfpm.Deb{Compression: "gzip"},
		},
	}
	// Semantic versions as they are: nfpm would otherwise turn 1.2.3-rc1
	// into Debian's 1.2.3~rc1, which names the file differently.
	info.VersionSchema = "none"
	var buf bytes.Buffer
	if err := deb.Default.Package(nfpm.WithDefaults(info), &buf); err != nil {
		return err
	}
	return writeFile(path, buf.Bytes(), 0o644)
}

// file is one file of the package, owned by root, stamped by nfpm with
// the package's time.
func file(src, dst string, mode os.FileMode) *files.Content {
	return &files.Content{Source: src, Destination: dst, Type: files.TypeFile, FileInfo: &files.ContentFileInfo{Mode: mode}}
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
