package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// containerUID is the user the image runs burner as; not root, and not
// an id a host's own users are likely to have.
const containerUID = 10001

// writeContainerContext writes the build context of the container image
// into dir: packaging/Containerfile, the binary of each architecture under
// bin/ARCH/, and under rootfs/ what FROM scratch lacks (the user in
// /etc/passwd and /etc/group, the CA certificates for webhooks over HTTPS,
// the config). An empty data/ becomes the volume, owned by the user.
// Nothing in it needs a registry, so the image builds offline.
func writeContainerContext(dir string, opts options, bins map[string]string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	ca, err := os.ReadFile(opts.CABundle)
	if err != nil {
		return err
	}
	copyFrom := func(src string) []byte {
		b, e := os.ReadFile(src)
		if e != nil && err == nil {
			err = e
		}
		return b
	}
	files := map[string][]byte{
		"Containerfile":                            copyFrom(filepath.Join(opts.Src, "packaging", "Containerfile")),
		"rootfs/etc/burner/burner.toml":            copyFrom(filepath.Join(opts.Src, "packaging", "container", "burner.toml")),
		"rootfs/etc/ssl/certs/ca-certificates.crt": ca,
		"rootfs/etc/passwd":                        []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nburner:x:%d:%d:burner:/data:/sbin/nologin\n", containerUID, containerUID)),
		"rootfs/etc/group":                         []byte(fmt.Sprintf("root:x:0:\nburner:x:%d:\n", containerUID)),
	}
	for arch, bin := range bins {
		files["bin/"+arch+"/burner"] = copyFrom(bin)
	}
	if err != nil {
		return err
	}
	var dirs []string
	for name, b := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		mode := os.FileMode(0o644)
		if filepath.Base(name) == "burner" {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, mode); err != nil {
			return err
		}
		if err := os.Chtimes(path, opts.Epoch, opts.Epoch); err != nil {
			return err
		}
		for d := filepath.Dir(path); d != dir && len(d) > len(dir); d = filepath.Dir(d) {
			dirs = append(dirs, d)
		}
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o750); err != nil {
		return err
	}
	// The layers keep the modification times: fix them, directories too.
	for _, d := range append(dirs, data, dir) {
		if err := os.Chtimes(d, opts.Epoch, opts.Epoch); err != nil {
			return err
		}
	}
	return nil
}
