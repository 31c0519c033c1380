package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// An end-to-end test of spec §9 with several nodes (§10): real `burner
// serve` processes on one PostgreSQL database, one webhook, and a receiver
// that checks what a Standard Webhooks consumer would.

// hookReceiver is an HTTP receiver of burner's webhooks that verifies each
// POST with its own implementation of the Standard Webhooks signature, and
// records every one. It answers 204 after delay, so that two requests for
// the same event at once would overlap long enough to be seen.
type hookReceiver struct {
	key   []byte // the secret's bytes, after whsec_
	delay time.Duration

	mu       sync.Mutex
	posts    map[string][]hookPost // by webhook-id
	inFlight map[string]int        // requests being answered, by webhook-id
	overlaps []string              // a request that came while another for its id was being answered
	bad      []string              // requests refused, and why
}

// hookPost is one POST the receiver answered with a 2xx.
type hookPost struct {
	arrived, answered time.Time
	to, subject       string
}

func newHookReceiver(t *testing.T, secret string, delay time.Duration) *hookReceiver {
	t.Helper()
	enc, ok := strings.CutPrefix(secret, "whsec_")
	key, err := base64.StdEncoding.DecodeString(enc)
	if !ok || err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	return &hookReceiver{key: key, delay: delay, posts: map[string][]hookPost{}, inFlight: map[string]int{}}
}

// verify checks a request as the Standard Webhooks specification says a
// consumer should: the signature over id.timestamp.body, one of the
// space-separated signatures of the header, and a timestamp near now.
func (rc *hookReceiver) verify(r *http.Request, body []byte, now time.Time) (string, error) {
	id, ts, sigs := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return id, fmt.Errorf("missing headers: id %q timestamp %q signature %q", id, ts, sigs)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return id, fmt.Errorf("webhook-timestamp %q: %v", ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d < -time.Minute || d > time.Minute {
		return id, fmt.Errorf("webhook-timestamp %s is %v away from now", ts, d)
	}
	mac := hmac.New(sha256.New, rc.key)
	io.WriteString(mac, id+"."+ts+".")
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, b64, _ := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if v == "v1" && err == nil && hmac.Equal(got, want) {
			return id, nil
		}
	}
	return id, fmt.Errorf("no valid v1 signature in %q", sigs)
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(r.Body)
	id := r.Header.Get("webhook-id")
	if err == nil {
		id, err = rc.verify(r, body, arrived)
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			ID, ToAddress string
			Subject       *string
		} `json:"data"`
	}
	if err == nil {
		switch {
		case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
			err = fmt.Errorf("%s with Content-Type %q, want a POST of application/json", r.Method, r.Header.Get("Content-Type"))
		case json.Unmarshal(body, &ev) != nil || ev.Type != "email.received" || ev.Data.ID != id || ev.Data.Subject == nil:
			err = fmt.Errorf("body %s, want an email.received event of the email %s", body, id)
		}
	}
	rc.mu.Lock()
	if err != nil {
		rc.bad = append(rc.bad, fmt.Sprintf("%s: %v", id, err))
		rc.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rc.inFlight[id] > 0 {
		rc.overlaps = append(rc.overlaps, fmt.Sprintf("%s at %s", id, arrived.Format("15:04:05.000")))
	}
	rc.inFlight[id]++
	rc.mu.Unlock()

	// A slow receiver, so that a second request for the same event
	// would come while this one is still being answered.
	select {
	case <-time.After(rc.delay):
	case <-r.Context().Done():
	}

	rc.mu.Lock()
	rc.inFlight[id]--
	rc.posts[id] = append(rc.posts[id], hookPost{arrived: arrived, answered: time.Now(), to: ev.Data.ToAddress, subject: *ev.Data.Subject})
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// received reports how many of ids the receiver has answered at least once.
func (rc *hookReceiver) received(ids map[string]string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for id := range ids {
		if len(rc.posts[id]) > 0 {
			n++
		}
	}
	return n
}

var deliveredRE = regexp.MustCompile(`(?m)^burner_webhook_deliveries_total\{[^}]*outcome="delivered"[^}]*\} (\d+)$`)

// webhookDelivered returns the count of events the node at base says it
// delivered, from its /metrics.
func webhookDelivered(t *testing.T, base, key string) int {
	t.Helper()
	status, _, body := apiGet(t, base, key, "/metrics")
	m := deliveredRE.FindSubmatch(body)
	if status != http.StatusOK || m == nil {
		t.Fatalf("GET /metrics: %d, no delivered series in:\n%s", status, body)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestWebhooksTwoNodes: two nodes on one database with the same hook,
// mail coming in on both. Every email's event arrives, signed; none is
// sent by both nodes at the same moment; and as the receiver answers 2xx
// in time, each arrives exactly once (spec §9, §10).
func TestWebhooksTwoNodes(t *testing.T) {
	dbURL := testDatabase(t)
	var raw [32]byte
	rand.Read(raw[:])
	secret := "whsec_" + base64.StdEncoding.EncodeToString(raw[:])
	rc := newHookReceiver(t, secret, 50*time.Millisecond)
	srv := httptest.NewServer(rc) // closed after the nodes stop: cleanups run last first
	t.Cleanup(srv.Close)

	config := fmt.Sprintf("[[webhooks]]\nurl = %q\nsecret = %q\n", srv.URL+"/hook", secret)
	a := spawnNodeWith(t, "A", dbURL, config)
	a.waitReady(t)
	b := spawnNodeWith(t, "B", dbURL, config)
	b.waitReady(t)
	key := a.firstKey()
	if key == "" || b.firstKey() != "" {
		t.Fatalf("first keys printed: A %q, B %q; want one, by A", a.firstKey(), b.firstKey())
	}

	// Half the mail through each node, at the same time, each message to
	// an inbox of its own named as its subject.
	const perNode = 20
	var (
		wg      sync.WaitGroup
		sendErr = make(chan error, 2)
	)
	for _, n := range []*nodeProc{a, b} {
		wg.Go(func() {
			c, err := smtp.Dial(n.smtp)
			if err != nil {
				sendErr <- err
				return
			}
			defer c.Close()
			for i := range perNode {
				if _, err := sendOne(c, fmt.Sprintf("hook%s-%d", strings.ToLower(n.name), i)); err != nil {
					sendErr <- fmt.Errorf("message %d to node %s: %w", i, n.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	sent := time.Now()
	close(sendErr)
	for err := range sendErr {
		t.Fatal(err)
	}

	// The ids of the emails, which are the webhook-ids of their events.
	ids := map[string]string{} // email id → inbox
	for _, n := range []*nodeProc{a, b} {
		for i := range perNode {
			inbox := fmt.Sprintf("hook%s-%d", strings.ToLower(n.name), i)
			status, _, body := apiGet(t, b.http, key, "/api/v1/emails?to="+inbox)
			var got []struct{ ID string }
			if status != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got) != 1 {
				t.Fatalf("GET the inbox %s: %d %s, want its one email", inbox, status, body)
			}
			ids[got[0].ID] = inbox
		}
	}

	waitFor(t, 15*time.Second, "every email's event arrives at the receiver", func() bool {
		return rc.received(ids) == len(ids)
	})
	allIn := time.Since(sent)
	// Both nodes have settled every event once the outbox is empty: then
	// no node can claim one again, and stopping them ends any request.
	waitFor(t, 10*time.Second, "the outbox is empty", func() bool {
		status, _, body := apiGet(t, a.http, key, "/metrics")
		return status == http.StatusOK && regexp.MustCompile(`(?m)^burner_webhook_events_waiting\{[^}]*\} 0$`).Match(body)
	})
	byA, byB := webhookDelivered(t, a.http, key), webhookDelivered(t, b.http, key)
	for _, n := range []*nodeProc{a, b} {
		if !n.stop() {
			t.Errorf("node %s did not stop within 15 s of SIGTERM: killed", n.name)
		}
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, bad := range rc.bad {
		t.Errorf("the receiver refused a request: %s", bad)
	}
	if len(rc.overlaps) > 0 {
		t.Errorf("%d requests came while another for the same event was being answered (spec §10: one node at a time), e.g. %v",
			len(rc.overlaps), rc.overlaps[:min(len(rc.overlaps), 5)])
	}
	total := 0
	for id, posts := range rc.posts {
		total += len(posts)
		inbox, ok := ids[id]
		switch {
		case !ok:
			t.Errorf("the receiver got %d POSTs for %s, which is no email sent", len(posts), id)
		case len(posts) != 1:
			var at []string
			for _, p := range posts {
				at = append(at, p.arrived.Format("15:04:05.000")+"–"+p.answered.Format("15:04:05.000"))
			}
			t.Errorf("the event of %s (%s) arrived %d times, at %v; want exactly once, as each got a 2xx in time", id, inbox, len(posts), at)
		case posts[0].to != inbox+"@inbox.test" || posts[0].subject != inbox:
			t.Errorf("the event of %s carries toAddress %q, subject %q; want %s@inbox.test and %s", id, posts[0].to, posts[0].subject, inbox, inbox)
		}
	}
	if byA+byB != len(ids) {
		t.Errorf("the nodes count %d + %d events delivered, want %d in all", byA, byB, len(ids))
	}
	t.Logf("%d events, %d POSTs, all in %v after the last 250; delivered by A %d, by B %d", len(ids), total, allIn, byA, byB)
}
