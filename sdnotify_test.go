package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenNotify listens where systemd would, and returns the socket's name
// and a function that reads the next notification.
func listenNotify(t *testing.T, name string) (string, func() string) {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return name, func() string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("reading a notification: %v", err)
		}
		return string(buf[:n])
	}
}

func TestSdNotify(t *testing.T) {
	if err := sdNotify("", "READY=1"); err != nil {
		t.Errorf("sdNotify without a socket: %v, want nothing done", err)
	}
	sock, read := listenNotify(t, filepath.Join(t.TempDir(), "notify.sock"))
	if err := sdNotify(sock, "READY=1"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "READY=1" {
		t.Errorf("notification %q, want READY=1", got)
	}
	// systemd may use the abstract namespace.
	abstract, read := listenNotify(t, fmt.Sprintf("@burner-test-%d", os.Getpid()))
	if err := sdNotify(abstract, "STOPPING=1"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "STOPPING=1" {
		t.Errorf("notification %q, want STOPPING=1", got)
	}
	if err := sdNotify(filepath.Join(t.TempDir(), "nobody"), "READY=1"); err == nil {
		t.Error("sdNotify to a socket nobody listens on succeeded")
	}
}

// TestServeNotifiesSystemd: serve says READY=1 once every listener serves
// and STOPPING=1 when it begins to shut down, as Type=notify expects.
func TestServeNotifiesSystemd(t *testing.T) {
	sock, read := listenNotify(t, filepath.Join(t.TempDir(), "notify.sock"))
	cfg := defaultConfig()
	cfg.Data = filepath.Join(t.TempDir(), "burner.db")
	cfg.SMTP.Listen, cfg.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(t.Output(), nil)), io.Discard, sock) }()
	ready := read()
	if !strings.HasPrefix(ready, "READY=1\n") || !strings.Contains(ready, "STATUS=Serving SMTP on 127.0.0.1:") {
		t.Errorf("first notification %q, want READY=1 and a status", ready)
	}
	cancel()
	if got := read(); got != "STOPPING=1" {
		t.Errorf("notification at shutdown %q, want STOPPING=1", got)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
