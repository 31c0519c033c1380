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

	hdr := func(name string, mode int64, typ byte) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: mode, ModTime: opts.Epoch, Uname: "root", Gname: "root", Format: tar.FormatPAX}
	}
	entries := []tarItem{{h: hdr(dir, 0o755, tar.TypeDir)}}
	for _, f := range files {
		b, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		entries = append(entries, tarItem{hdr(dir+f.name, f.mode, tar.TypeReg), b})
	}
	tgz, err := tarGz(entries, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	return writeFile(path, tgz, 0o644)
}

// tarItem is an entry of a gzipped tar: its header, whose Size tarGz
// sets for a file, and a file's data.
type tarItem struct {
	h    *tar.Header
	data []byte
}

// tarGz returns entries as a tar, in their order, gzipped at level. The
// tarball, the .deb's two archives, the npm package and the sdist are
// all made here; gzip's header carries no name and no time unless asked
// to, so the bytes depend on the entries alone.
func tarGz(entries []tarItem, level int) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if e.h.Typeflag == tar.TypeReg {
			e.h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(e.h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
