package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// TestWebhookLeaseKillNine: on either store, an event whose request is
// in flight when its node gets kill -9 (the receiver does not answer) is
// sent within 20 s of the node being up again: the restarted node takes
// back at once the lease its earlier run held (spec §9), rather than wait
// for it to end. On bbolt, leases live in the memory of the one process.
func TestWebhookLeaseKillNine(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { leaseKillNine(t, filepath.Join(t.TempDir(), "burner.db")) })
	t.Run("postgres", func(t *testing.T) { leaseKillNine(t, testDatabase(t)) })
}

func leaseKillNine(t *testing.T, dbURL string) {
	var raw [32]byte
	rand.Read(raw[:])
	secret := "whsec_" + base64.StdEncoding.EncodeToString(raw[:])
	var answering atomic.Bool
	arrived, delivered := make(chan string, 16), make(chan string, 16)
	stopped := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		if !answering.Load() {
			arrived <- id
			// Down: no answer, until the node that asked dies.
			select {
			case <-r.Context().Done():
			case <-stopped:
			}
			return
		}
		delivered <- id
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close) // last: after the nodes have stopped
	t.Cleanup(func() { close(stopped) })

	config := fmt.Sprintf("node = \"hooked\"\n[[webhooks]]\nurl = %q\nsecret = %q\n", srv.URL+"/hook", secret)
	n := spawnNodeWith(t, "first run", dbURL, config)
	n.waitReady(t)
	c, err := smtp.Dial(n.smtp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sendOne(c, "leased"); err != nil {
		t.Fatalf("sending the message: %v", err)
	}
	c.Close()
	var id string
	select {
	case id = <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook request did not arrive within 10 s of the 250")
	}
	n.cmd.Process.Kill() // while the request is in flight, its event leased
	<-n.exited
	answering.Store(true)

	again := spawnNodeWith(t, "second run", dbURL, config)
	again.waitReady(t)
	up := time.Now()
	select {
	case got := <-delivered:
		if got != id {
			t.Errorf("the receiver got webhook-id %s, want %s, the event in flight at the kill", got, id)
		}
		t.Logf("the event in flight at kill -9 was sent %v after the node was up again", time.Since(up).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("the event in flight at kill -9 was not sent within 20 s of the node being up again (spec §9)")
	}
	if !strings.HasPrefix(dbURL, "postgres") {
		return
	}
	if !strings.Contains(again.output(), "webhook leases of an earlier run taken back") {
		t.Errorf("the restarted node did not log that it took back its lease:\n%s", again.output())
	}
}

// TestNodeName: a node's name is the node setting, or else the host's
// name and the SMTP address; two nodes on one host, which cannot bind one
// address, have two names, and a node keeps its name across restarts.
func TestNodeName(t *testing.T) {
	a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2525}
	b := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2526}
	if got := nodeName("mx1", a); got != "mx1" {
		t.Errorf(`nodeName("mx1", %v) = %q, want the setting`, a, got)
	}
	if nodeName("", a) != nodeName("", a) || nodeName("", a) == nodeName("", b) || !strings.HasSuffix(nodeName("", a), "/127.0.0.1:2525") {
		t.Errorf("nodeName without a setting = %q for %v and %q for %v: want the host/address, distinct", nodeName("", a), a, nodeName("", b), b)
	}
}
