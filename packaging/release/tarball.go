package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// tarFile is one file of a tarball: its name inside, where it comes from
// and its mode.
type tarFile struct {
	name, src string
	mode      int64
}

// writeTarball writes the tarball of linux/arch to path: one directory,
// burner_VERSION_linux_ARCH/, holding the binary bin, the license, the
// README, config.example.toml and the systemd units (which run
// /usr/local/bin/burner, where docs/install.md puts it).
func writeTarball(path string, opts options, bin, arch string) error {
	dir := fmt.Sprintf("burner_%s_linux_%s/", opts.Version, arch)
	files := []tarFile{
		{"burner", bin, 0o755},
		{"LICENSE", filepath.Join(opts.Src, "LICENSE"), 0o644},
		{"README.md", filepath.Join(opts.Src, "README.md"), 0o644},
		{"config.example.toml", filepath.Join(opts.Src, "config.example.toml"), 0o644},
	}
	for _, u := range units {
		files = append(files, tarFile{u, filepath.Join(opts.Src, "packaging", u), 0o644})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })

	var buf bytes.Buffer
	// gzip's header carries no name and no time unless asked to.
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	hdr := func(name string, mode int64) *tar.Header {
		return &tar.Header{Name: name, Mode: mode, ModTime: opts.Epoch, Uname: "root", Gname: "root", Format: tar.FormatPAX}
	}
	d := hdr(dir, 0o755)
	d.Typeflag = tar.TypeDir
	if err := tw.WriteHeader(d); err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		h := hdr(dir+f.name, f.mode)
		h.Typeflag, h.Size = tar.TypeReg, int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return writeFile(path, buf.Bytes(), 0o644)
}
