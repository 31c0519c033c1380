package smtpd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// spec §2: a file with LF line endings, sent as a new user would with the
// real curl binary, gets 250 and is stored byte for byte. curl sends the
// file as it is and ends it with a CRLF of its own before ".\r\n". curl
// 7.88 stuffs a dot only after a CRLF, so the file's line that starts with
// a dot after an LF arrives unstuffed, and must keep its dot (readData).
func TestCurlUploadLF(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is not installed: %v", err)
		}
		t.Skipf("curl is not installed (%v): skipping the curl upload", err)
	}
	db := openDB(t)
	addr := startDaemon(t, db, Options{})
	var b strings.Builder
	b.WriteString("From: News <news@x.test>\nTo: bob@inbox.test\nSubject: newsletter, LF only\nContent-Type: text/plain; charset=utf-8\n\n")
	for b.Len() < 4096 {
		b.WriteString("A line written in an editor, which ends lines with LF.\n")
		if b.Len() > 2048 && !strings.Contains(b.String(), "\n.") {
			b.WriteString(".a line that starts with a dot\n")
		}
	}
	file := filepath.Join(t.TempDir(), "news.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, curl, "-s", "-S", "smtp://"+addr, "--mail-from", "a@x.test", "--mail-rcpt", "bob@inbox.test",
		"--upload-file", file).CombinedOutput()
	if err != nil {
		t.Fatalf("curl --upload-file: %v\n%s", err, out)
	}
	es := list(t, db, "bob")
	if len(es) != 1 {
		t.Fatalf("stored %d emails, want 1", len(es))
	}
	raw := rawOf(t, db, es[0].ID)
	_, msg, _ := strings.Cut(raw, "+0000\r\n")
	if want := b.String() + "\r\n"; msg != want {
		t.Errorf("stored %q,\nwant the file and curl's CRLF: %q", msg, want)
	}
	if es[0].Subject == nil || *es[0].Subject != "newsletter, LF only" {
		t.Errorf("subject = %v, want the file's", es[0].Subject)
	}
}
