package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"burner/server"
	"burner/storage"
	"burner/storage/boltdb"
)

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestWebhookChildServer is not a test on its own: TestWebhookKillNine
// runs the test binary again with BURNER_HOOK_CHILD_DATA set, and this
// becomes a server with one webhook, to BURNER_HOOK_CHILD_URL.
func TestWebhookChildServer(t *testing.T) {
	data := os.Getenv("BURNER_HOOK_CHILD_DATA")
	if data == "" {
		t.Skip("runs only as TestWebhookKillNine's child process")
	}
	cfg := defaultConfig()
	cfg.DNS.Resolver = os.Getenv("BURNER_DNS_RESOLVER") // TestMain's: no lookup leaves this machine
	cfg.Data = data
	cfg.SMTP.Listen, cfg.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Webhooks = []WebhookConfig{{URL: os.Getenv("BURNER_HOOK_CHILD_URL"), Secret: hookSecret}}
	a, err := start(context.Background(), cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)), io.Discard)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("READY %s %s\n", a.smtpLn.Addr(), a.httpLn.Addr())
	a.run(context.Background()) // until SIGKILL
}

// startHookChild starts the server of TestWebhookChildServer on data and
// returns it with its SMTP address.
func startHookChild(t *testing.T, data, url string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWebhookChildServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BURNER_HOOK_CHILD_DATA="+data, "BURNER_HOOK_CHILD_URL="+url)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "READY" {
				ready <- f[1]
			}
		}
	}()
	select {
	case smtpAddr := <-ready:
		return cmd, smtpAddr
	case <-time.After(30 * time.Second):
		t.Fatal("child server not ready within 30s")
		return nil, ""
	}
}

// TestWebhookKillNine: an email that got its 250 while the receiver was
// down, followed by kill -9, is sent once the server is started again and
// the receiver is up (spec §9: at least once, never lost).
func TestWebhookKillNine(t *testing.T) {
	if os.Getenv("BURNER_HOOK_CHILD_DATA") != "" || os.Getenv("BURNER_CHILD_DATA") != "" {
		t.Skip("child process")
	}
	// A port with nothing behind it: connections are refused until the
	// receiver comes up on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr + "/hook"
	data := filepath.Join(t.TempDir(), "burner.db")

	srv, smtpAddr := startHookChild(t, data, url)
	const msg = "From: a@sender.test\r\nSubject: never lost\r\n\r\nbody\r\n"
	if err := sendMail(t, smtpAddr, "a@sender.test", []string{"durable@inbox.test"}, msg); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	srv.Process.Signal(syscall.SIGKILL) // right after the 250
	srv.Wait()

	var (
		mu  sync.Mutex
		got []map[string]any
	)
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the receiver's port %s was taken meanwhile: %v", addr, err)
	}
	rc := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Header.Get("webhook-id") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, body.Data)
		mu.Unlock()
	}))
	rc.Listener.Close()
	rc.Listener = ln
	rc.Start()
	defer rc.Close()

	startHookChild(t, data, url)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook of an email acknowledged before kill -9 did not arrive within 30s of the restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if got[0]["toAddress"] != "durable@inbox.test" || got[0]["subject"] != "never lost" {
		t.Errorf("the webhook after the restart carries %v, want the email to durable@inbox.test", got[0])
	}
}

// TestStatsShowsWebhookEvents: `burner stats` lists the events waiting
// per hook, from the file and through a running server's control socket.
func TestStatsShowsWebhookEvents(t *testing.T) {
	hook := WebhookConfig{URL: "http://127.0.0.1:1/hook", Secret: hookSecret}.webhook()
	data := filepath.Join(t.TempDir(), "burner.db")
	db, err := boltdb.Open(data, boltdb.Options{Hooks: []storage.Hook{hook.StorageHook()}})
	if err != nil {
		t.Fatal(err)
	}
	subject := "x"
	if _, err := db.Deliver(context.Background(), &storage.Message{From: "a@x.test", Subject: &subject, Raw: []byte("x")},
		[]string{"a@x.test", "b@x.test"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, err := runCmd(t, "stats", "--data", data)
	if err != nil || !regexp.MustCompile(`webhook `+regexp.QuoteMeta(hook.ID())+` +2 waiting, oldest received `).MatchString(out) {
		t.Errorf("burner stats = %q, %v; want 2 events waiting for %s", out, err, hook.ID())
	}

	// A server holding the file: stats asks it over the control socket.
	ln, err := net.Listen("unix", controlSocket(data))
	if err != nil {
		t.Fatal(err)
	}
	ctl := &http.Server{Handler: server.New(mustOpen(t, data), server.Options{}, nil).ControlHandler()}
	go ctl.Serve(ln)
	defer ctl.Close()
	out, err = runCmd(t, "stats", "--data", data)
	if err != nil || !strings.Contains(out, "webhook "+hook.ID()) {
		t.Errorf("burner stats through the control socket = %q, %v; want the hook's events", out, err)
	}
}

func mustOpen(t *testing.T, data string) *boltdb.DB {
	t.Helper()
	db, err := boltdb.Open(data, boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
