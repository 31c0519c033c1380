package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/jackc/pgx/v5"
)

// End-to-end tests of spec §5's /healthz on a disk that really fills up:
// a small tmpfs mounted for the test, a real `burner serve` on it, real
// SMTP and HTTP.

// mountTmpfs mounts a tmpfs of size bytes on a new directory and returns
// the directory; the test unmounts it when it ends (after what it started
// later has stopped: cleanups run last first). Mounting needs root: the
// test skips without it, but fails under CI=true, which runs as root.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10)+",mode=0755", "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a tmpfs on %s (CI=true runs as root, which may): %v\n%s", dir, err, out)
		}
		t.Skipf("cannot mount a tmpfs for a disk that fills up (needs root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system has no room left,
// and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for range 1 << 16 { // bounded: 4 GiB, far more than the test's disk
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v, want ENOSPC", dir, err)
	}
	// A write cut short leaves the last few bytes of a page free.
	for size := 4096; size > 0; size /= 2 {
		f.Write(chunk[:size])
	}
	return path
}

// noise returns a message of about n bytes to inbox@inbox.test: random
// base64 in lines of 76, which compression does not shrink much.
func noise(inbox string, n int) string {
	raw := make([]byte, n*3/4)
	rand.Read(raw)
	enc := base64.StdEncoding.EncodeToString(raw)
	var b strings.Builder
	fmt.Fprintf(&b, "From: fill@sender.test\r\nTo: %s@inbox.test\r\nSubject: %s\r\n\r\n", inbox, inbox)
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n")
	return b.String()
}

// deliverCode sends msg to inbox@inbox.test at addr and returns the reply
// code of the end of its DATA: 250, or the refusal's.
func deliverCode(t *testing.T, addr, inbox, msg string) int {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatalf("smtp.Dial(%s): %v", addr, err)
	}
	defer c.Close()
	c.CommandTimeout, c.SubmissionTimeout = 30*time.Second, 30*time.Second
	err = c.SendMail("fill@sender.test", []string{inbox + "@inbox.test"}, strings.NewReader(msg))
	var se *smtp.SMTPError
	switch {
	case err == nil:
		c.Quit()
		return 250
	case errors.As(err, &se):
		return se.Code
	}
	t.Fatalf("sending to %s: %v", inbox, err)
	return 0
}

var writableRE = regexp.MustCompile(`(?m)^burner_storage_writable (\d+)$`)

// waitHealth polls /healthz of n until it answers status, and checks that
// burner_storage_writable on /metrics says the same; it fails the test
// when that takes more than 2 s (spec §5).
func waitHealth(t *testing.T, n *nodeProc, key string, status int, why string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	var got int
	for {
		res, err := http.Get(n.http + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz: %v", err)
		}
		res.Body.Close()
		if got = res.StatusCode; got == status {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /healthz %s: %d, want %d within 2 s", why, got, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := "1"
	if status != http.StatusOK {
		want = "0"
	}
	code, _, body := apiGet(t, n.http, key, "/metrics")
	if m := writableRE.FindSubmatch(body); code != http.StatusOK || m == nil || string(m[1]) != want {
		t.Errorf("GET /metrics %s: %d, burner_storage_writable %q; want %s, as /healthz says %d", why, code, m, want, status)
	}
}

// TestHealthzDiskFullBolt: on a disk that fills up while the file has
// free pages, a delivery whose commit needs more than those pages gets a
// 451, and /healthz says 503 within 2 s, although a probe of one page
// still fits (spec §5); once space is freed, the next delivery gets a
// 250 and /healthz says 200 again.
func TestHealthzDiskFullBolt(t *testing.T) {
	dir := mountTmpfs(t, 48<<20)
	n := spawnNodeWith(t, "disk", filepath.Join(dir, "burner.db"), "")
	n.waitReady(t)
	key := n.firstKey()
	waitHealth(t, n, key, http.StatusOK, "on a new file")

	// Free pages in the file, in runs of one message each: half of 40
	// messages of 100 KB, every other one deleted.
	const size, count = 100 << 10, 40
	for i := range count {
		inbox := fmt.Sprintf("fill%d", i)
		if code := deliverCode(t, n.smtp, inbox, noise(inbox, size)); code != 250 {
			t.Fatalf("message %d of %d to fill the file: %d, want 250", i+1, count, code)
		}
	}
	for i := 0; i < count; i += 2 {
		status, _, body := apiGet(t, n.http, key, fmt.Sprintf("/api/v1/emails?to=fill%d", i))
		var emails []struct{ ID string }
		if err := json.Unmarshal(body, &emails); status != http.StatusOK || err != nil || len(emails) != 1 {
			t.Fatalf("GET the inbox fill%d: %d, %d emails (%v), want 1", i, status, len(emails), err)
		}
		req, _ := http.NewRequest(http.MethodDelete, n.http+"/api/v1/emails/"+emails[0].ID, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("DELETE email %s: %v", emails[0].ID, err)
		}
		res.Body.Close()
		if res.StatusCode/100 != 2 {
			t.Fatalf("DELETE email %s: %d", emails[0].ID, res.StatusCode)
		}
	}

	filler := fillDisk(t, dir)
	waitHealth(t, n, key, http.StatusOK, "on a full disk, with free pages in the file")
	// Larger than any run of free pages: the commit grows the file, which
	// the disk refuses, although the free pages add up to more.
	if code := deliverCode(t, n.smtp, "big", noise("big", 3<<20)); code != 451 {
		t.Fatalf("a 3 MB message on a full disk: %d, want 451 (a commit that failed)", code)
	}
	waitHealth(t, n, key, http.StatusServiceUnavailable, "after a commit failed on a full disk")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code := deliverCode(t, n.smtp, "big", noise("big", 3<<20)); code != 250 {
		t.Fatalf("the 3 MB message once space is freed: %d, want 250", code)
	}
	waitHealth(t, n, key, http.StatusOK, "once space is freed and a delivery succeeded")
}

// TestHealthzDiskFullPostgres: the same on PostgreSQL, whose database
// lives in a tablespace on the small disk (the WAL stays on the cluster's
// own): a delivery that needs a new page of a table gets 452 (the
// database says disk_full), and /healthz says 503 within 2 s, although
// its probe, an update of one row in place, still succeeds; once space
// is freed, the next delivery gets a 250 and /healthz says 200.
func TestHealthzDiskFullPostgres(t *testing.T) {
	if os.Getenv("BURNER_TEST_POSTGRES") == "" && os.Getenv("CI") != "true" {
		t.Skip("BURNER_TEST_POSTGRES is not set: the PostgreSQL tests are off")
	}
	dir := mountTmpfs(t, 16<<20) // first, so that it is unmounted after the cluster stops
	c := newCluster(t)
	if c.postgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		// PostgreSQL must reach the mount through the test's directories.
		for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			os.Chmod(d, 0o711)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"CREATE TABLESPACE small LOCATION '" + dir + "'",
		"CREATE DATABASE full_disk TABLESPACE small",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	conn.Close(ctx)
	n := spawnNodeWith(t, "pg", c.url("full_disk"), "")
	n.waitReady(t)
	key := n.firstKey()
	if code := deliverCode(t, n.smtp, "first", noise("first", 64<<10)); code != 250 {
		t.Fatalf("a message on a disk with room: %d, want 250", code)
	}
	waitHealth(t, n, key, http.StatusOK, "on a disk with room")

	filler := fillDisk(t, dir)
	var code int
	for i := range 50 { // bounded: the first page a table needs fails
		if code = deliverCode(t, n.smtp, "fill", noise("fill", 200<<10)); code != 250 {
			break
		}
		t.Logf("message %d stored in the free space of the pages", i+1)
	}
	if code != 452 && code != 451 {
		t.Fatalf("a message on a full disk: %d, want 452 or 451", code)
	}
	waitHealth(t, n, key, http.StatusServiceUnavailable, fmt.Sprintf("after a commit failed on a full disk (%d)", code))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code := deliverCode(t, n.smtp, "fill", noise("fill", 200<<10)); code != 250 {
		t.Fatalf("a message once space is freed: %d, want 250", code)
	}
	waitHealth(t, n, key, http.StatusOK, "once space is freed and a delivery succeeded")
}
