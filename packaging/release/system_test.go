package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// The tests here install the .deb with dpkg and build the image with
// buildah: they change the machine (a package, a user, directories), so
// they run only where BURNER_TEST_SYSTEM=1 says that is fine, as .ci/run
// does, and undo what they did. Under CI=true, a missing variable or tool
// is a failure, not a skip.

// systemTest skips t unless system tests are allowed and the tools are
// here; under CI=true it fails instead.
func systemTest(t *testing.T, tools ...string) {
	t.Helper()
	stop := t.Skipf
	if os.Getenv("CI") == "true" {
		stop = t.Fatalf
	}
	if os.Getenv("BURNER_TEST_SYSTEM") != "1" {
		stop("BURNER_TEST_SYSTEM=1 is not set: this test installs packages and users on the machine, so it runs only where that is wanted (.ci/run sets it)")
	}
	if os.Geteuid() != 0 {
		stop("this test needs root")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			stop("%s is not installed (.ci/run installs it)", tool)
		}
	}
}

// sh runs a command and returns its combined output; it fails t when the
// command fails.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// packageInstalled reports whether dpkg has the burner package installed
// or with its config left.
func packageInstalled() bool {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", "burner").Output()
	return err == nil && strings.TrimSpace(string(out)) != "not-installed" && len(out) > 0
}

// mode returns path's permissions and owner as "0750 burner:burner".
func mode(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Errorf("stat %s: %v", path, err)
		return ""
	}
	st := fi.Sys().(*syscall.Stat_t)
	u, _ := user.LookupId(strconv.Itoa(int(st.Uid)))
	g, _ := user.LookupGroupId(strconv.Itoa(int(st.Gid)))
	name := func(n string, ok bool, id uint32) string {
		if ok {
			return n
		}
		return strconv.Itoa(int(id))
	}
	return fmt.Sprintf("%04o %s:%s", fi.Mode().Perm(), name(u.Username, u != nil, st.Uid), name(g.Name, g != nil, st.Gid))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestDebPackage installs the amd64 package with dpkg on this machine,
// checks what it installed, runs the installed burner as its user with
// the installed config, delivers and reads a mail, upgrades to a newer
// package and reads the same mail, then removes and purges the package.
func TestDebPackage(t *testing.T) {
	systemTest(t, "dpkg", "dpkg-query", "systemd-analyze")
	if runtime := os.Getenv("GOARCH"); runtime != "" && runtime != "amd64" {
		t.Skip("the amd64 package installs on amd64 only")
	}
	// What was here before stays; what the test makes goes.
	hadUser := userExists("burner")
	hadDirs := map[string]bool{}
	for _, d := range []string{"/var/lib/burner", "/var/backups/burner", "/etc/burner"} {
		hadDirs[d] = exists(d)
	}
	if packageInstalled() {
		t.Logf("a burner package is installed (a run that was killed?); purging it first")
		sh(t, "dpkg", "-P", "burner")
	}
	data, err := os.MkdirTemp("", "burner-deb-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(data)
		if packageInstalled() {
			if out, err := exec.Command("dpkg", "-P", "burner").CombinedOutput(); err != nil {
				t.Errorf("cleanup: dpkg -P burner: %v\n%s", err, out)
			}
		}
		for d, had := range hadDirs {
			if !had {
				os.RemoveAll(d)
			}
		}
		if !hadUser && userExists("burner") {
			if out, err := exec.Command("userdel", "burner").CombinedOutput(); err != nil {
				t.Errorf("cleanup: userdel burner: %v\n%s", err, out)
			}
			exec.Command("groupdel", "burner").Run() // gone with the user on most systems
		}
	})

	v1 := filepath.Join(sharedRelease(t, "1.2.3"), "burner_1.2.3_amd64.deb")
	out := sh(t, "dpkg", "-i", v1)
	t.Logf("dpkg -i %s:\n%s", filepath.Base(v1), out)
	if !strings.Contains(out, "systemd is not running") && !exists("/run/systemd/system") {
		t.Errorf("dpkg -i without a running systemd did not say how to start burner:\n%s", out)
	}

	// The files, their owners and modes.
	for path, want := range map[string]string{
		"/usr/bin/burner":                           "0755 root:root",
		"/lib/systemd/system/burner.service":        "0644 root:root",
		"/lib/systemd/system/burner-backup.service": "0644 root:root",
		"/lib/systemd/system/burner-backup.timer":   "0644 root:root",
		"/usr/lib/sysusers.d/burner.conf":           "0644 root:root",
		"/etc/burner/burner.toml":                   "0640 root:burner",
		"/var/lib/burner":                           "0750 burner:burner",
		"/var/backups/burner":                       "0750 burner:burner",
	} {
		if got := mode(t, path); got != want {
			t.Errorf("%s is %s after dpkg -i, want %s", path, got, want)
		}
	}
	u, err := user.Lookup("burner")
	if err != nil {
		t.Fatalf("no user burner after dpkg -i: %v", err)
	}
	if uid, _ := strconv.Atoi(u.Uid); uid >= 1000 || u.HomeDir != "/var/lib/burner" {
		t.Errorf("user burner has uid %s and home %s; want a system user (uid < 1000) at /var/lib/burner", u.Uid, u.HomeDir)
	}
	if conf := sh(t, "dpkg-query", "-W", "-f", "${Conffiles}", "burner"); !strings.Contains(conf, "/etc/burner/burner.toml") {
		t.Errorf("dpkg-query lists conffiles %q, want /etc/burner/burner.toml", conf)
	}
	if v := sh(t, "/usr/bin/burner", "version"); !strings.HasPrefix(v, "burner 1.2.3 ") {
		t.Errorf("the installed burner version = %q, want 1.2.3", v)
	}
	unit := readFile(t, "/lib/systemd/system/burner.service")
	if !bytes.Contains(unit, []byte("ExecStart=/usr/bin/burner serve --config /etc/burner/burner.toml\n")) {
		t.Errorf("the installed burner.service does not run /usr/bin/burner with /etc/burner/burner.toml:\n%s", unit)
	}
	verify := exec.Command("systemd-analyze", "verify", "/lib/systemd/system/burner.service",
		"/lib/systemd/system/burner-backup.service", "/lib/systemd/system/burner-backup.timer")
	verify.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0", "SYSTEMD_PAGER=")
	vout, err := verify.CombinedOutput()
	if err != nil || strings.Contains(string(vout), "burner") {
		t.Errorf("systemd-analyze verify of the installed units: %v\n%s", err, vout)
	}

	// The installed burner, as its user, on the installed config.
	dataFile := filepath.Join(data, "burner.db")
	if err := os.Chmod(data, 0o750); err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	asBurner := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	srv := startServer(t, asBurner, "/usr/bin/burner", "--config", "/etc/burner/burner.toml", "serve",
		"--data", dataFile, "--smtp", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if srv.key == "" {
		t.Fatalf("the installed burner printed no first API key:\n%s", srv.log())
	}
	key := srv.key
	deliver(t, srv.smtp, "deb@inbox.test", "installed by dpkg")
	readMail(t, srv.http, key, "deb", "installed by dpkg")
	srv.stop(t)

	// An edit of the config survives the upgrade, which asks nothing.
	edited := append(readFile(t, "/etc/burner/burner.toml"), "# edited by the operator\n"...)
	if err := os.WriteFile("/etc/burner/burner.toml", edited, 0o640); err != nil {
		t.Fatal(err)
	}
	v2 := filepath.Join(sharedRelease(t, "1.2.4"), "burner_1.2.4_amd64.deb")
	out = sh(t, "dpkg", "-i", v2)
	t.Logf("dpkg -i %s:\n%s", filepath.Base(v2), out)
	if v := sh(t, "/usr/bin/burner", "version"); !strings.HasPrefix(v, "burner 1.2.4 ") {
		t.Errorf("after the upgrade burner version = %q, want 1.2.4", v)
	}
	if got := readFile(t, "/etc/burner/burner.toml"); !bytes.Equal(got, edited) {
		t.Errorf("the upgrade changed the edited /etc/burner/burner.toml:\n%s", got)
	}
	if got := mode(t, "/etc/burner/burner.toml"); got != "0640 root:burner" {
		t.Errorf("/etc/burner/burner.toml is %s after the upgrade, want 0640 root:burner", got)
	}
	srv = startServer(t, asBurner, "/usr/bin/burner", "--config", "/etc/burner/burner.toml", "serve",
		"--data", dataFile, "--smtp", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if srv.key != "" {
		t.Errorf("after the upgrade burner made a new first key; want the old one kept")
	}
	readMail(t, srv.http, key, "deb", "installed by dpkg")
	srv.stop(t)

	// Remove: the binary and units go; the config and the mail stay.
	out = sh(t, "dpkg", "-r", "burner")
	t.Logf("dpkg -r burner:\n%s", out)
	for _, gone := range []string{"/usr/bin/burner", "/lib/systemd/system/burner.service"} {
		if exists(gone) {
			t.Errorf("%s is still there after dpkg -r", gone)
		}
	}
	for _, kept := range []string{"/etc/burner/burner.toml", "/var/lib/burner", dataFile} {
		if !exists(kept) {
			t.Errorf("%s is gone after dpkg -r; remove keeps config and mail", kept)
		}
	}

	// Purge: the config goes; the mail stays, and the package says where.
	out = sh(t, "dpkg", "-P", "burner")
	t.Logf("dpkg -P burner:\n%s", out)
	if exists("/etc/burner/burner.toml") {
		t.Errorf("/etc/burner/burner.toml is still there after dpkg -P")
	}
	for _, kept := range []string{"/var/lib/burner", dataFile} {
		if !exists(kept) {
			t.Errorf("%s is gone after dpkg -P; a package never deletes mail", kept)
		}
	}
	if !strings.Contains(out, "/var/lib/burner") {
		t.Errorf("dpkg -P did not say where the mail stays:\n%s", out)
	}
	if left, _ := filepath.Glob("/etc/systemd/system/*/burner*"); len(left) > 0 {
		t.Errorf("after dpkg -P, systemd links are left: %q", left)
	}
}

func userExists(name string) bool {
	_, err := user.Lookup(name)
	return err == nil
}

// server is a burner started by a test, out of process.
type server struct {
	cmd        *exec.Cmd
	smtp, http string // the addresses it listens on
	key        string // the first API key it printed, if any
	out        *syncBuffer
	done       chan error
	stopped    bool // stop ran
	// killed says the server may exit by a signal: buildah run kills
	// its child when it gets the SIGTERM itself.
	killed bool
}

func (s *server) log() string { return s.out.String() }

var (
	startedRE = regexp.MustCompile(`msg="burner started" version=\S+ smtp=(\S+) .*http=(\S+) `)
	keyRE     = regexp.MustCompile(`bnr_[A-Za-z0-9_-]{43}`)
)

// startServer runs a burner serve command and waits, at most 30 s, until
// it logs that it serves; t's cleanup stops it.
func startServer(t *testing.T, attr *syscall.SysProcAttr, name string, args ...string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(name, args...), out: &syncBuffer{}, done: make(chan error, 1)}
	// Its own process group, which stop signals whole: buildah run's
	// child gets the SIGTERM too.
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Setpgid = true
	s.cmd.SysProcAttr = attr
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { s.done <- s.cmd.Wait(); pw.Close() }()
	t.Cleanup(func() { s.stop(t) })
	started := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.out.WriteString(line + "\n")
			if m := startedRE.FindStringSubmatch(line); m != nil {
				started <- m
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case m := <-started:
		s.smtp, s.http = m[1], m[2]
		s.key = keyRE.FindString(s.out.String())
	case err := <-s.done:
		s.done <- err
		t.Fatalf("%s exited before it served: %v\n%s", name, err, s.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not serve within 30 s:\n%s", name, s.log())
	}
	return s
}

// stop ends the server with SIGTERM and waits for it; a second call finds
// it stopped.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if s.stopped {
		return
	}
	s.stopped = true
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil && !s.killed {
			t.Errorf("burner exited with %v after SIGTERM:\n%s", err, s.log())
		}
	case <-time.After(30 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		t.Errorf("burner did not stop within 30 s of SIGTERM")
	}
}

// deliver sends one mail over SMTP, with subject as its subject.
func deliver(t *testing.T, addr, to, subject string) {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatalf("smtp.Dial(%s): %v", addr, err)
	}
	defer c.Close()
	msg := "From: ci@sender.test\r\nTo: " + to + "\r\nSubject: " + subject + "\r\n\r\nhello\r\n"
	if err := c.SendMail("ci@sender.test", []string{to}, strings.NewReader(msg)); err != nil {
		t.Fatalf("SendMail to %s: %v", to, err)
	}
	c.Quit()
}

// readMail lists inbox through the API with key and wants one email with
// subject.
func readMail(t *testing.T, addr, key, inbox, subject string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/api/v1/emails?to="+inbox, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/v1/emails?to=%s: %v", inbox, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var emails []struct {
		Subject string `json:"subject"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &emails) != nil || len(emails) != 1 || emails[0].Subject != subject {
		t.Fatalf("GET /api/v1/emails?to=%s = %s %s; want one email with subject %q", inbox, resp.Status, body, subject)
	}
}

// syncBuffer is a bytes.Buffer that the reading goroutine and the test
// may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestContainerImage builds the image from the release's context with
// buildah, in a storage of its own that it removes after, checks its
// configuration, then runs burner inside it: serve, deliver, read, and
// burner health.
func TestContainerImage(t *testing.T) {
	systemTest(t, "buildah")
	dir := sharedRelease(t, "1.2.3")
	store := t.TempDir()
	buildah := func(args ...string) []string {
		return append([]string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs"}, args...)
	}
	// buildah keeps a cache of blob digests in /var/lib/containers
	// whatever --root says: remove it when the test made it.
	if !exists("/var/lib/containers") {
		t.Cleanup(func() { os.RemoveAll("/var/lib/containers") })
	}
	const image = "localhost/burner-test:1.2.3"
	start := time.Now()
	sh(t, "buildah", buildah("bud", "--isolation", "chroot", "--format", "docker", "-t", image, filepath.Join(dir, "container"))...)
	t.Logf("buildah bud took %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		exec.Command("buildah", buildah("rm", "--all")...).Run()
		exec.Command("buildah", buildah("rmi", "--all", "--force")...).Run()
	})

	var inspect struct {
		Docker struct {
			Config struct {
				User         string
				WorkingDir   string
				Entrypoint   []string
				Cmd          []string
				ExposedPorts map[string]struct{}
				Volumes      map[string]struct{}
				Healthcheck  struct{ Test []string }
			} `json:"config"`
		}
	}
	js := sh(t, "buildah", buildah("inspect", "--type", "image", image)...)
	if err := json.Unmarshal([]byte(js), &inspect); err != nil {
		t.Fatalf("buildah inspect: %v\n%s", err, js)
	}
	cfg := inspect.Docker.Config
	ports := make([]string, 0, len(cfg.ExposedPorts))
	for p := range cfg.ExposedPorts {
		ports = append(ports, p)
	}
	sort.Strings(ports)
	got := fmt.Sprintf("user %s, workdir %s, %q %q, ports %q, volumes %v, healthcheck %q",
		cfg.User, cfg.WorkingDir, cfg.Entrypoint, cfg.Cmd, ports, cfg.Volumes, cfg.Healthcheck.Test)
	want := `user 10001:10001, workdir /etc/burner, ["/usr/bin/burner"] ["serve"], ports ["2525/tcp" "8080/tcp"], volumes map[/data:{}], healthcheck ["CMD" "/usr/bin/burner" "health"]`
	if got != want {
		t.Errorf("the image's config is\n%s\nwant\n%s", got, want)
	}

	ctr := strings.TrimSpace(sh(t, "buildah", buildah("from", "--name", "burner-test", image)...))
	run := func(args ...string) []string {
		return buildah(append([]string{"run", "--isolation", "chroot", ctr, "--"}, args...)...)
	}
	srv := startServer(t, nil, "buildah", run("/usr/bin/burner", "serve", "--smtp", "127.0.0.1:0", "--http", "127.0.0.1:0")...)
	srv.killed = true
	if srv.key == "" {
		t.Fatalf("burner in the image printed no first API key:\n%s", srv.log())
	}
	if !strings.Contains(srv.log(), "data=/data/burner.db") {
		t.Errorf("burner in the image does not keep its data in /data/burner.db:\n%s", srv.log())
	}
	deliver(t, srv.smtp, "image@inbox.test", "inside the image")
	readMail(t, srv.http, srv.key, "image", "inside the image")
	out := sh(t, "buildah", run("/usr/bin/burner", "health", "--http", srv.http)...)
	if !strings.Contains(out, "200 OK") {
		t.Errorf("burner health in the image: %q, want 200 OK", out)
	}
	if id := sh(t, "buildah", run("/usr/bin/burner", "version")...); !strings.HasPrefix(id, "burner 1.2.3 ") {
		t.Errorf("burner version in the image = %q, want 1.2.3", id)
	}
	srv.stop(t)
	if out, err := exec.Command("buildah", run("/usr/bin/burner", "health", "--http", srv.http)...).CombinedOutput(); err == nil {
		t.Errorf("burner health in the image after the server stopped: %q, exit 0; want 1", out)
	}
}
