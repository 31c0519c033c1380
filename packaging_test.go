package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnits verifies the unit files in packaging/ with
// systemd-analyze (Debian's systemd package; .ci/run installs it), and
// fails on any complaint about them, warnings included: systemd ignores
// a misspelt hardening option with a mere warning.
func TestSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd): the unit files are not verified")
	}
	// verify wants ExecStart's binary to exist: point the units at this
	// test binary, which does, in a copy.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var units []string
	for _, name := range []string{"burner.service", "burner-backup.service", "burner-backup.timer"} {
		b, err := os.ReadFile(filepath.Join("packaging", name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "/usr/local/bin/burner ") && strings.HasSuffix(name, ".service") {
			t.Errorf("%s does not run /usr/local/bin/burner, where docs/deploy.md installs it", name)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/burner", exe)), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, path)
	}
	cmd := exec.Command(analyze, append([]string{"verify"}, units...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0", "SYSTEMD_PAGER=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case line == "":
		case strings.Contains(line, "burner"):
			t.Errorf("systemd-analyze verify: %s", line)
		default:
			t.Logf("systemd-analyze verify (not about our units): %s", line)
		}
	}
}

// TestSystemdUnitHardening keeps the hardening the issue asked for from
// being dropped by accident.
func TestSystemdUnitHardening(t *testing.T) {
	b, err := os.ReadFile("packaging/burner.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Type=notify", "User=burner", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
		"ReadWritePaths=/var/lib/burner", "AmbientCapabilities=CAP_NET_BIND_SERVICE",
		"CapabilityBoundingSet=CAP_NET_BIND_SERVICE", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
		"SystemCallFilter=@system-service", "MemoryDenyWriteExecute=yes",
	} {
		if !strings.Contains(string(b), "\n"+want+"\n") {
			t.Errorf("packaging/burner.service lacks %q", want)
		}
	}
}

// TestPackagedConfigs loads the configs the .deb and the container image
// install, as burner will, and checks the settings they exist for.
func TestPackagedConfigs(t *testing.T) {
	for _, tc := range []struct {
		file             string
		data, smtp, http string
	}{
		{"packaging/deb/burner.toml", "/var/lib/burner/burner.db", ":25", "127.0.0.1:8080"},
		{"packaging/container/burner.toml", "/data/burner.db", ":2525", ":8080"},
	} {
		cfg, err := serveConfig(tc.file)
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if cfg.Data != tc.data || cfg.SMTP.Listen != tc.smtp || cfg.HTTP.Listen != tc.http {
			t.Errorf("%s: data %q, smtp.listen %q, http.listen %q; want %q, %q, %q",
				tc.file, cfg.Data, cfg.SMTP.Listen, cfg.HTTP.Listen, tc.data, tc.smtp, tc.http)
		}
	}
}
