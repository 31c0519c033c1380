package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"burner/emailjson"
	"burner/storage"
	"burner/storage/boltdb"
)

// openDB opens a fresh data file with opts that the test closes when it
// ends.
func openDB(t testing.TB, opts boltdb.Options) *boltdb.DB {
	t.Helper()
	db, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), opts)
	if err != nil {
		t.Fatalf("boltdb.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// received is one request a test receiver got.
type received struct {
	id, timestamp, signature, contentType string
	body                                  []byte
}

// verifyStandardWebhook checks a request as a receiver would, with the
// algorithm of the Standard Webhooks specification written out here, not
// this package's: HMAC-SHA256 over "id.timestamp.body" with the base64
// decoded secret, compared with each "v1," signature given.
func verifyStandardWebhook(secret string, r received) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	io.WriteString(mac, r.id+"."+r.timestamp+".")
	mac.Write(r.body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(r.signature) {
		if v, ok := strings.CutPrefix(sig, "v1,"); ok {
			if got, err := base64.StdEncoding.DecodeString(v); err == nil && hmac.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

// receiver is a real HTTP receiver on 127.0.0.1; answer decides each
// response from the request number (from 1).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []received
	inFlight atomic.Int32
	most     atomic.Int32
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := rc.inFlight.Add(1)
		defer rc.inFlight.Add(-1)
		for m := rc.most.Load(); n > m && !rc.most.CompareAndSwap(m, n); m = rc.most.Load() {
		}
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"),
			r.Header.Get("webhook-signature"), r.Header.Get("Content-Type"), body})
		count := len(rc.got)
		rc.mu.Unlock()
		answer(count, w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// waitFor polls cond until it holds, or fails the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond) // a poll interval, not a wait for an event
	}
}

// startWorker runs the worker over db until the test ends.
func startWorker(t *testing.T, db storage.Outbox, opts Options) *Worker {
	t.Helper()
	w, err := New(db, opts, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return within 30s of its context's end")
		}
	})
	return w
}

func hooksOf(ws ...Hook) []storage.Hook {
	out := make([]storage.Hook, len(ws))
	for i, w := range ws {
		out[i] = w.StorageHook()
	}
	return out
}

func sendTo(t *testing.T, db storage.Engine, subject string, to ...string) []storage.Email {
	t.Helper()
	body := "<p>" + subject + " & <b>more</b></p>"
	es, err := db.Deliver(context.Background(), &storage.Message{From: "s@x.test", FromName: "S", Subject: &subject, Body: &body,
		Raw: []byte("Subject: " + subject + "\r\n\r\nhi\r\n")}, to)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// TestWebhooksDeliver: each email of a covered inbox reaches the receiver
// once, signed (checked with an independent implementation), with the
// body of spec §9; an inbox the hook does not cover sends nothing. The
// worker polls once an hour here: the commit itself wakes it.
func TestWebhooksDeliver(t *testing.T) {
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
	hook := Hook{URL: rc.URL + "/hook?token=x", Inboxes: []string{"ci-*"}, Secret: testSecret}
	db := openDB(t, boltdb.Options{Hooks: hooksOf(hook)})
	reg := prometheus.NewRegistry()
	startWorker(t, db, Options{Hooks: []Hook{hook}, Poll: time.Hour, Metrics: reg})

	emails := sendTo(t, db, "build 1", "CI-1@x.test", "alice@x.test")
	emails = append(emails, sendTo(t, db, "build 2", "ci-2@x.test")...)
	waitFor(t, "two webhooks received", func() bool { return len(rc.requests()) >= 2 })
	waitFor(t, "both recorded as delivered", func() bool {
		return metricValue(t, reg, "burner_webhook_deliveries_total", map[string]string{"hook": hook.ID(), "outcome": "delivered"}) == 2
	})
	if got := rc.requests(); len(got) != 2 {
		t.Fatalf("the receiver got %d requests, want 2 (one per email of a ci-* inbox)", len(got))
	}
	for _, want := range []storage.Email{emails[0], emails[2]} {
		var r *received
		for _, g := range rc.requests() {
			if g.id == want.ID {
				r = &g
			}
		}
		if r == nil {
			t.Errorf("no webhook for email %s", want.ID)
			continue
		}
		if !verifyStandardWebhook(testSecret, *r) {
			t.Errorf("the signature %q of %s does not verify", r.signature, r.id)
		}
		if r.contentType != "application/json" {
			t.Errorf("Content-Type = %q, want application/json", r.contentType)
		}
		if ts, err := strconv.ParseInt(r.timestamp, 10, 64); err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
			t.Errorf("webhook-timestamp = %q, want the Unix seconds of now", r.timestamp)
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 3 {
			t.Fatalf("body %s: want an object of type, timestamp and data (%v)", r.body, err)
		}
		wantData, _ := json.Marshal(emailjson.New(want))
		var data, wantMap map[string]any
		json.Unmarshal(body["data"], &data)
		json.Unmarshal(wantData, &wantMap)
		if string(body["type"]) != `"email.received"` || string(body["timestamp"]) != `"`+wantMap["receivedAt"].(string)+`"` || len(data) != 8 {
			t.Errorf("body = %s, want type email.received, timestamp the receivedAt and the eight fields", r.body)
		}
		for k, v := range wantMap {
			if data[k] != v {
				t.Errorf("data[%q] = %v, want %v", k, data[k], v)
			}
		}
		if !bytes.Contains(r.body, []byte(`& <b>more</b>`)) {
			t.Errorf("body %s: the HTML is escaped, the API's is not", r.body)
		}
	}
	waitFor(t, "nothing waiting", func() bool { w, _ := db.Waiting(context.Background()); return len(w) == 0 })
	if v := metricValue(t, reg, "burner_webhook_events_waiting", map[string]string{"hook": hook.ID()}); v != 0 {
		t.Errorf("burner_webhook_events_waiting = %v, want 0", v)
	}
}

// TestWebhooksRetry: a receiver that fails (500), times out, redirects and
// then recovers gets the event four times, with the same id and body, a
// fresh timestamp and a valid signature each time; the redirect is not
// followed; the metrics count three failures and one success.
func TestWebhooksRetry(t *testing.T) {
	var followed atomic.Bool
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			return
		}
		switch n {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			select { // past the worker's timeout
			case <-release:
			case <-r.Context().Done():
			}
		case 3:
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	defer close(release)
	hook := Hook{URL: rc.URL + "/hook", Secret: testSecret}
	db := openDB(t, boltdb.Options{Hooks: hooksOf(hook)})
	reg := prometheus.NewRegistry()
	var tick atomic.Int64 // the worker's clock moves a second at each look
	start := time.Now()
	now := func() time.Time { return start.Add(time.Duration(tick.Add(1)) * time.Second) }
	// A lease of an hour of that clock: 30 s of it pass in a third of a
	// real second, before the renewal (every 10 real seconds) comes.
	startWorker(t, db, Options{Hooks: []Hook{hook}, Metrics: reg, Now: now, Poll: 10 * time.Millisecond,
		Timeout: 200 * time.Millisecond, Lease: time.Hour, Backoff: func(int) time.Duration { return time.Millisecond }})

	e := sendTo(t, db, "retry me", "bob@x.test")[0]
	waitFor(t, "a delivery after three failures", func() bool {
		return metricValue(t, reg, "burner_webhook_deliveries_total", map[string]string{"hook": hook.ID(), "outcome": "delivered"}) == 1
	})
	got := rc.requests()
	if len(got) != 4 {
		t.Fatalf("the receiver got %d requests, want 4: 500, timeout, redirect, 204", len(got))
	}
	stamps := make(map[string]bool)
	for i, r := range got {
		if r.id != e.ID || !bytes.Equal(r.body, got[0].body) {
			t.Errorf("attempt %d: id %s, body %s; want id %s and the first attempt's body", i+1, r.id, r.body, e.ID)
		}
		if !verifyStandardWebhook(testSecret, r) {
			t.Errorf("attempt %d: the signature does not verify", i+1)
		}
		stamps[r.timestamp] = true
	}
	if len(stamps) != 4 {
		t.Errorf("timestamps %v: want a fresh one per attempt", stamps)
	}
	if followed.Load() {
		t.Error("the redirect was followed")
	}
	if f, s := metricValue(t, reg, "burner_webhook_attempts_total", map[string]string{"hook": hook.ID(), "result": "failure"}),
		metricValue(t, reg, "burner_webhook_attempts_total", map[string]string{"hook": hook.ID(), "result": "success"}); f != 3 || s != 1 {
		t.Errorf("attempts: %v failures, %v successes; want 3 and 1", f, s)
	}
}

// TestWebhooksExpire: an event whose next attempt would fall past 24 h
// from its receivedAt is dropped after its last attempt; one already past
// it when the worker starts is dropped unsent. Both are counted.
func TestWebhooksExpire(t *testing.T) {
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	hook := Hook{URL: rc.URL, Secret: testSecret}
	db := openDB(t, boltdb.Options{Hooks: hooksOf(hook)})
	old := sendTo(t, db, "old", "a@x.test", "b@x.test")[0]
	clock := old.ReceivedAt.Add(25 * time.Hour) // the worker's: it starts a day and an hour later
	reg := prometheus.NewRegistry()
	startWorker(t, db, Options{Hooks: []Hook{hook}, Metrics: reg, Poll: 10 * time.Millisecond,
		Now: func() time.Time { return clock }, Backoff: func(int) time.Duration { return time.Hour }})
	waitFor(t, "both events expired", func() bool {
		return metricValue(t, reg, "burner_webhook_deliveries_total", map[string]string{"hook": hook.ID(), "outcome": "expired"}) == 2
	})
	if got := rc.requests(); len(got) != 0 {
		t.Errorf("the receiver got %d requests for events past 24h, want none", len(got))
	}
	if w, err := db.Waiting(context.Background()); err != nil || len(w) != 0 {
		t.Errorf("Waiting after the drop = %+v, %v; want nothing", w, err)
	}
}

// TestWebhooksGiveUp: an attempt whose next one would come after 24 h is
// the last: the event is dropped, and counted.
func TestWebhooksGiveUp(t *testing.T) {
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	hook := Hook{URL: rc.URL, Secret: testSecret}
	db := openDB(t, boltdb.Options{Hooks: hooksOf(hook)})
	e := sendTo(t, db, "late", "a@x.test")[0]
	clock := e.ReceivedAt.Add(23*time.Hour + 30*time.Minute)
	reg := prometheus.NewRegistry()
	startWorker(t, db, Options{Hooks: []Hook{hook}, Metrics: reg, Poll: 10 * time.Millisecond,
		Now: func() time.Time { return clock }, Backoff: func(int) time.Duration { return time.Hour }})
	waitFor(t, "the event given up", func() bool {
		return metricValue(t, reg, "burner_webhook_deliveries_total", map[string]string{"hook": hook.ID(), "outcome": "expired"}) == 1
	})
	if got := rc.requests(); len(got) != 1 {
		t.Errorf("the receiver got %d requests, want the one last attempt", len(got))
	}
	if w, _ := db.Waiting(context.Background()); len(w) != 0 {
		t.Errorf("Waiting after giving up = %+v, want nothing", w)
	}
}

// TestWebhooksInFlight: a slow receiver has at most four requests of a
// hook at once, and gets every event once it answers.
func TestWebhooksInFlight(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) { <-release })
	hook := Hook{URL: rc.URL, Secret: testSecret}
	db := openDB(t, boltdb.Options{Hooks: hooksOf(hook)})
	startWorker(t, db, Options{Hooks: []Hook{hook}, Poll: 10 * time.Millisecond})
	for i := range 10 {
		sendTo(t, db, "m", "in"+string(rune('a'+i))+"@x.test")
	}
	waitFor(t, "four requests in flight", func() bool { return rc.inFlight.Load() == 4 })
	if w, _ := db.Waiting(context.Background()); len(w) != 1 || w[0].Events != 10 {
		t.Errorf("Waiting with four in flight = %+v, want 10 events", w)
	}
	close(release)
	waitFor(t, "ten requests", func() bool { return len(rc.requests()) == 10 })
	waitFor(t, "nothing waiting", func() bool { w, _ := db.Waiting(context.Background()); return len(w) == 0 })
	if m := rc.most.Load(); m > 4 {
		t.Errorf("the receiver saw %d requests at once, want at most 4", m)
	}
}

// BenchmarkIngestWebhooks measures Deliver, under b.RunParallel, with no
// hook, with a hook whose receiver answers at once, and with one whose
// receiver is down (connections refused): the worker must not slow the
// 250 (spec §9).
func BenchmarkIngestWebhooks(b *testing.B) {
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer fast.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/"
	ln.Close()
	body := strings.Repeat("<p>a line of a newsletter, with a <a href=\"https://x.test/\">link</a></p>\n", 100)
	// "stored" writes the events but runs no worker: the cost of the
	// outbox alone, apart from the CPU the worker and the receiver (in this
	// process) take from the deliveries.
	for _, tc := range []struct{ name, url string }{{"none", ""}, {"stored", down}, {"fast", fast.URL}, {"down", down}} {
		b.Run(tc.name, func(b *testing.B) {
			var hooks []Hook
			if tc.url != "" {
				hooks = []Hook{{URL: tc.url, Secret: testSecret}}
			}
			db := openDB(b, boltdb.Options{Hooks: hooksOf(hooks...)})
			if tc.name == "stored" {
				hooks = nil
			}
			w, err := New(db, Options{Hooks: hooks}, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); w.Run(ctx) }()
			defer func() { cancel(); <-done }()
			subject := "a newsletter"
			msg := &storage.Message{From: "s@x.test", Subject: &subject, Body: &body, Text: body, Raw: []byte("Subject: x\r\n\r\n" + body)}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := db.Deliver(context.Background(), msg, []string{"bench@x.test"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
