package smtpd

// Ingest with a webhook (spec §9): the same load as
// BenchmarkIngest against the real daemon on a bbolt file with one hook
// and its delivery worker running, the receiver a process of its own, as
// it would be: the figures are the daemon's, the worker's sends included.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"burner/storage"
	"burner/storage/boltdb"
	"burner/webhook"
)

// BenchmarkIngestHook runs BenchmarkIngest's load into 100 inboxes with no
// hook, with a hook whose receiver answers 204 at once, and with one whose
// receiver refuses connections; the hook covers every inbox. Compare
// msgs/s, p50-ms and p99-ms (the 250, which the worker must not slow) and
// cpu-µs/msg (the daemon's CPU, the worker's POSTs included).
func BenchmarkIngestHook(b *testing.B) {
	for _, name := range []string{"none", "fast", "down"} {
		b.Run("hook="+name, func(b *testing.B) {
			var hooks []webhook.Hook
			switch name {
			case "fast":
				hooks = []webhook.Hook{{URL: "http://" + startReceiver(b) + "/", Secret: benchSecret}}
			case "down":
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				hooks = []webhook.Hook{{URL: "http://" + ln.Addr().String() + "/", Secret: benchSecret}}
				ln.Close()
			}
			var sh []storage.Hook
			for _, h := range hooks {
				sh = append(sh, h.StorageHook())
			}
			db, err := boltdb.Open(filepath.Join(b.TempDir(), "burner.db"), boltdb.Options{Hooks: sh})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			w, err := webhook.New(db, webhook.Options{Hooks: hooks}, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); w.Run(ctx) }()
			b.Cleanup(func() { cancel(); <-done })
			runLoad(b, serveStore(b, db), 100)
			// What the worker had not sent when the load ended: the sends
			// not in the figures above.
			ws, err := db.Waiting(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			waiting := 0
			for _, w := range ws {
				waiting += w.Events
			}
			b.ReportMetric(float64(waiting), "events-waiting")
		})
	}
}

// benchSecret is a Standard Webhooks secret: whsec_ and 32 bytes.
var benchSecret = "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))

// startReceiver starts a webhook receiver, this test binary again as
// TestWebhookReceiver, and returns its address; it stops when b ends.
func startReceiver(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWebhookReceiver$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "BURNER_RECEIVER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close() // the receiver's cue to stop
		io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			b.Errorf("webhook receiver: %v", err)
		}
	})
	s := bufio.NewScanner(stdout)
	for s.Scan() {
		if addr, ok := strings.CutPrefix(s.Text(), "RECEIVER "); ok {
			return addr
		}
	}
	b.Fatalf("webhook receiver said no address: %v", s.Err())
	return ""
}

// TestWebhookReceiver is BenchmarkIngestHook's receiver: it answers every
// request with 204 until its standard input closes. It runs only in a
// process of its own, with BURNER_RECEIVER set.
func TestWebhookReceiver(t *testing.T) {
	if os.Getenv("BURNER_RECEIVER") == "" {
		t.Skip("runs only as BenchmarkIngestHook's receiver process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(ln)
	os.Stdout.WriteString("RECEIVER " + ln.Addr().String() + "\n")
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}
