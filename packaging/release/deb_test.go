package main

import (
	"archive/tar"
	"bytes"
	"crypto/md5"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// arMember is one member of an ar archive.
type arMember struct {
	name, header string
	data         []byte
}

// readAr reads an ar archive as deb(5) has it, or fails the test.
func readAr(t *testing.T, b []byte) []arMember {
	t.Helper()
	rest, ok := bytes.CutPrefix(b, []byte("!<arch>\n"))
	if !ok {
		t.Fatalf("not an ar archive: starts %q", b[:min(len(b), 8)])
	}
	var out []arMember
	for len(rest) > 0 {
		if len(rest) < 60 || string(rest[58:60]) != "`\n" {
			t.Fatalf("bad ar member header %q", rest[:min(len(rest), 60)])
		}
		h := string(rest[:60])
		size, err := strconv.Atoi(strings.TrimSpace(h[48:58]))
		if err != nil || 60+size > len(rest) {
			t.Fatalf("ar member header %q: bad size", h)
		}
		out = append(out, arMember{strings.TrimSpace(h[:16]), h, rest[60 : 60+size]})
		rest = rest[60+size+size%2:]
	}
	return out
}

// TestWriteDeb writes a package of a stand-in binary from this tree and
// reads it back as dpkg does: the three members in order, the control
// file, md5sums and conffiles that agree with the files, every directory
// before what it holds, owners, modes and times.
func TestWriteDeb(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "burner")
	if err := os.WriteFile(bin, []byte("\x7fELF a stand-in"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := options{Version: "1.2.3", Src: filepath.Join("..", ".."), Epoch: testEpoch}
	path := filepath.Join(dir, "burner.deb")
	if err := writeDeb(path, opts, bin, "arm64"); err != nil {
		t.Fatalf("writeDeb: %v", err)
	}
	members := readAr(t, readFile(t, path))
	var names []string
	for _, m := range members {
		names = append(names, m.name)
		if want := fmt.Sprintf("%-12d%-6d%-6d%-8s", testEpoch.Unix(), 0, 0, "100644"); m.header[16:48] != want {
			t.Errorf("ar member %s: header %q, want time, owner, group and mode %q", m.name, m.header, want)
		}
	}
	if got := strings.Join(names, " "); got != "debian-binary control.tar.gz data.tar.gz" {
		t.Fatalf("the package holds %s, want debian-binary control.tar.gz data.tar.gz", got)
	}
	if string(members[0].data) != "2.0\n" {
		t.Errorf("debian-binary = %q, want 2.0", members[0].data)
	}

	data := readTarGz(t, "data.tar.gz", members[2].data)
	var (
		listing []string
		sums    strings.Builder
		size    int64
		seen    = map[string]bool{"./": true}
	)
	for _, e := range data {
		h := e.hdr
		listing = append(listing, fmt.Sprintf("%s %o", h.Name, h.Mode))
		if h.Uname != "root" || h.Gname != "root" || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(testEpoch) {
			t.Errorf("%s: %s:%s (%d:%d) at %v, want root's at %v", h.Name, h.Uname, h.Gname, h.Uid, h.Gid, h.ModTime, testEpoch)
		}
		parent := h.Name[:strings.LastIndex(strings.TrimSuffix(h.Name, "/"), "/")+1]
		if !seen[parent] {
			t.Errorf("%s comes before its directory %s", h.Name, parent)
		}
		seen[h.Name] = true
		if h.Typeflag == tar.TypeReg {
			fmt.Fprintf(&sums, "%x  %s\n", md5.Sum(e.data), strings.TrimPrefix(h.Name, "./"))
			size += h.Size
		}
	}
	want := []string{
		"./etc/ 755", "./etc/burner/ 755", "./etc/burner/burner.toml 640",
		"./lib/ 755", "./lib/systemd/ 755", "./lib/systemd/system/ 755",
		"./lib/systemd/system/burner-backup.service 644", "./lib/systemd/system/burner-backup.timer 644",
		"./lib/systemd/system/burner.service 644",
		"./usr/ 755", "./usr/bin/ 755", "./usr/bin/burner 755", "./usr/lib/ 755", "./usr/lib/sysusers.d/ 755",
		"./usr/lib/sysusers.d/burner.conf 644", "./usr/share/ 755", "./usr/share/doc/ 755", "./usr/share/doc/burner/ 755",
		"./usr/share/doc/burner/README.md 644", "./usr/share/doc/burner/config.example.toml 644",
		"./usr/share/doc/burner/copyright 644",
	}
	if strings.Join(listing, "\n") != strings.Join(want, "\n") {
		t.Errorf("data.tar.gz holds\n%s\nwant\n%s", strings.Join(listing, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range data {
		if e.hdr.Name == "./lib/systemd/system/burner.service" &&
			(!bytes.Contains(e.data, []byte("ExecStart=/usr/bin/burner")) || bytes.Contains(e.data, []byte("/usr/local/bin"))) {
			t.Errorf("burner.service does not run /usr/bin/burner:\n%s", e.data)
		}
	}

	control := map[string]tarEntry{}
	var order []string
	for _, e := range readTarGz(t, "control.tar.gz", members[1].data) {
		control[e.hdr.Name] = e
		order = append(order, fmt.Sprintf("%s %o", e.hdr.Name, e.hdr.Mode))
	}
	if got, want := strings.Join(order, ", "), "./control 644, ./md5sums 644, ./conffiles 644, ./postinst 755, ./postrm 755, ./prerm 755"; got != want {
		t.Errorf("control.tar.gz holds %s, want %s", got, want)
	}
	wantControl := "Package: burner\nVersion: 1.2.3\nSection: mail\nPriority: optional\nArchitecture: arm64\n" +
		"Maintainer: The burner authors <burner@localhost>\nInstalled-Size: " + strconv.FormatInt(size/1024, 10) + "\n" +
		"Description: " + strings.Join(debDescription, "\n ") + "\n"
	if got := string(control["./control"].data); got != wantControl {
		t.Errorf("control =\n%s\nwant\n%s", got, wantControl)
	}
	if got := string(control["./md5sums"].data); got != sums.String() {
		t.Errorf("md5sums =\n%s\nwant the files' sums\n%s", got, sums.String())
	}
	if got := string(control["./conffiles"].data); got != "/etc/burner/burner.toml\n" {
		t.Errorf("conffiles = %q, want /etc/burner/burner.toml", got)
	}
	if got, want := control["./postinst"].data, readFile(t, filepath.Join("..", "deb", "postinst")); !bytes.Equal(got, want) {
		t.Errorf("postinst is not packaging/deb/postinst")
	}
}
