package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/smtp"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// End-to-end tests of spec §13: a real `burner serve` (in process, or as
// processes of their own for several nodes), real SMTP clients (Go's
// net/smtp, Python's smtplib), and the session log read back through the
// API: what a test suite of an application does to try its failure paths.

// sessionView is a record of GET /api/v1/sessions, as a client reads it.
type sessionView struct {
	ID         string  `json:"id"`
	Node       string  `json:"node"`
	EndedAt    *string `json:"endedAt"`
	Outcome    *string `json:"outcome"`
	Recipients []struct {
		Address string  `json:"address"`
		Reply   *string `json:"reply"`
		Fault   string  `json:"fault"`
	} `json:"recipients"`
	Data *struct {
		Reply *string `json:"reply"`
		Bytes int64   `json:"bytes"`
		Fault string  `json:"fault"`
	} `json:"data"`
	Emails     []string `json:"emails"`
	Transcript []struct {
		C string `json:"c"`
		S string `json:"s"`
	} `json:"transcript"`
}

// outcome returns the session's outcome, "open" while it is open.
func (s sessionView) outcome() string {
	if s.Outcome == nil {
		return "open"
	}
	return *s.Outcome
}

// ruleView is a fault rule as the API shows it.
type ruleView struct {
	ID, Inbox, Stage, Reply string
	Times, Used, PerMinute  int
	Delay                   string
	Disconnect              bool
}

// apiDo sends method base+path with key and a JSON body (none when "").
func apiDo(t *testing.T, method, base, key, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}

// armRule arms rule (JSON) through the API at base and returns it.
func armRule(t *testing.T, base, key, rule string) ruleView {
	t.Helper()
	status, body := apiDo(t, http.MethodPost, base, key, "/api/v1/faults", rule)
	var r ruleView
	if status != http.StatusCreated || json.Unmarshal(body, &r) != nil {
		t.Fatalf("POST /api/v1/faults %s: %d %s", rule, status, body)
	}
	return r
}

// rules returns the rules the API at base lists, by id.
func rules(t *testing.T, base, key string) map[string]ruleView {
	t.Helper()
	status, body := apiDo(t, http.MethodGet, base, key, "/api/v1/faults", "")
	var rs []ruleView
	if status != http.StatusOK || json.Unmarshal(body, &rs) != nil {
		t.Fatalf("GET /api/v1/faults: %d %s", status, body)
	}
	out := make(map[string]ruleView)
	for _, r := range rs {
		out[r.ID] = r
	}
	return out
}

// sessionsOf returns the session log of inbox through the API at base,
// newest first, once its newest want sessions have ended (a session's
// record is written in a batch after the client's last reply).
func sessionsOf(t *testing.T, base, key, inbox string, want int) []sessionView {
	t.Helper()
	var got []sessionView
	waitFor(t, 10*time.Second, fmt.Sprintf("%d ended sessions of %s", want, inbox), func() bool {
		status, _, body := apiGet(t, base, key, "/api/v1/sessions?limit=100&to="+inbox)
		got = nil
		if status != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Fatalf("GET /api/v1/sessions?to=%s: %d %s", inbox, status, body)
		}
		ended := 0
		for _, s := range got {
			if s.EndedAt != nil {
				ended++
			}
		}
		return ended >= want
	})
	return got
}

// deliverOnce is an application's one try to send a message to rcpt over
// net/smtp: the error it meets, as net/smtp reports it.
func deliverOnce(addr, rcpt string) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello("app.test"); err != nil {
		return err
	}
	if err := c.Mail("app@sender.test"); err != nil {
		return err
	}
	if err := c.Rcpt(rcpt); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "From: app@sender.test\r\nTo: %s\r\nSubject: order confirmed\r\n\r\nThank you.\r\n", rcpt)
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// codeOf returns the SMTP code of an error of net/smtp, 0 for another
// error (the connection closed) and -1 for none.
func codeOf(err error) int {
	var te *textproto.Error
	switch {
	case err == nil:
		return -1
	case errors.As(err, &te):
		return te.Code
	}
	return 0
}

// startFaultsApp starts burner in process on the store data (a bbolt path
// or a postgres:// URL) with extra config lines.
func startFaultsApp(t *testing.T, data, extra string) *testApp {
	t.Helper()
	cfg := writeConfig(t, fmt.Sprintf("data = %q\n%s\n[smtp]\nlisten = \"127.0.0.1:0\"\ndomains = [\"inbox.test\"]\n[http]\nlisten = \"127.0.0.1:0\"\n", data, extra))
	return startAppConfig(t, cfg, io.Discard)
}

// forEachStore runs test with a new store of each engine.
func forEachStore(t *testing.T, test func(t *testing.T, data string)) {
	t.Run("bbolt", func(t *testing.T) { test(t, filepath.Join(t.TempDir(), "burner.db")) })
	t.Run("postgres", func(t *testing.T) { test(t, testDatabase(t)) })
}

const faultsOn = "[faults]\nenabled = true\n[[faults.rules]]\ninbox = \"cfg-*\"\nstage = \"rcpt\"\nreply = \"450 4.7.1 Configured\"\ntimes = 1\n"

// The "done when": a test suite makes burner answer 451 three
// times and then accept, hang up after the final dot, and rate-limit one
// inbox, and then reads in the session log exactly what its application
// did; on both engines.
func TestFaultsEndToEnd(t *testing.T) {
	forEachStore(t, func(t *testing.T, data string) {
		ta := startFaultsApp(t, data, faultsOn)
		base, addr := "http://"+ta.httpLn.Addr().String(), ta.smtpLn.Addr().String()

		// Retry after 451: the application tries until it is taken.
		retry := armRule(t, base, ta.key, `{"inbox":"retry-*","stage":"rcpt","reply":"451 4.3.0 Try again later","times":3}`)
		var tries []int
		for range 5 {
			err := deliverOnce(addr, "retry-1@inbox.test")
			tries = append(tries, codeOf(err))
			if err == nil {
				break
			}
		}
		if !slices.Equal(tries, []int{451, 451, 451, -1}) {
			t.Errorf("the application's tries met %v, want 451 three times, then success (-1)", tries)
		}
		// The unknown outcome: the connection closes after the final dot.
		lost := armRule(t, base, ta.key, `{"inbox":"lost","stage":"data","disconnect":true,"delay":"50ms"}`)
		if err := deliverOnce(addr, "lost@inbox.test"); codeOf(err) != 0 {
			t.Errorf("a message to lost: %v, want the connection closed without a reply", err)
		}
		// A rate limit: two messages a minute, then 450.
		busy := armRule(t, base, ta.key, `{"inbox":"busy","stage":"rcpt","reply":"450 4.2.1 Slow down","perMinute":2}`)
		var codes []int
		for range 4 {
			codes = append(codes, codeOf(deliverOnce(addr, "busy@inbox.test")))
		}
		if !slices.Equal(codes, []int{-1, -1, 450, 450}) {
			t.Errorf("four messages to busy met %v, want two taken, then 450 twice", codes)
		}
		// The configured rule, armed at start: once.
		if codes := []int{codeOf(deliverOnce(addr, "cfg-1@inbox.test")), codeOf(deliverOnce(addr, "cfg-1@inbox.test"))}; !slices.Equal(codes, []int{450, -1}) {
			t.Errorf("two messages to cfg-1 met %v, want the configured 450, then success", codes)
		}

		// What the session log says, newest first.
		log := sessionsOf(t, base, ta.key, "retry-1", 4)
		if len(log) != 4 {
			t.Fatalf("retry-1's sessions: %+v, want 4", log)
		}
		ids := ta.listIDs(t, ta.key, "retry-1")
		if d := log[0]; d.outcome() != "delivered" || len(d.Emails) != 1 || len(ids) != 1 || !strings.HasPrefix(ids[0], d.Emails[0]) ||
			d.Data == nil || *d.Data.Reply != "250 2.0.0 OK "+d.ID {
			t.Errorf("the last session of retry-1: %+v, want it delivered as %v, its 250 naming it", d, ids)
		}
		for _, f := range log[1:] {
			if f.outcome() != "faulted" || len(f.Recipients) != 1 || f.Recipients[0].Fault != retry.ID || *f.Recipients[0].Reply != "451 4.3.0 Try again later" || f.Data != nil {
				t.Errorf("a refused try of retry-1: %+v, want faulted by %s at RCPT", f, retry.ID)
			}
		}
		lostLog := sessionsOf(t, base, ta.key, "lost", 1)
		if l := lostLog[0]; len(lostLog) != 1 || l.outcome() != "faulted" || l.Data == nil || l.Data.Reply != nil || l.Data.Fault != lost.ID ||
			l.Data.Bytes == 0 || len(l.Emails) != 0 {
			t.Errorf("lost's session: %+v, want faulted at data by %s, no reply, the bytes counted, nothing stored", lostLog, lost.ID)
		}
		if got := ta.listIDs(t, ta.key, "lost"); len(got) != 0 {
			t.Errorf("lost holds %v, want nothing stored", got)
		}
		var busyOutcomes []string
		for _, s := range sessionsOf(t, base, ta.key, "busy", 4) {
			busyOutcomes = append(busyOutcomes, s.outcome())
		}
		if !slices.Equal(busyOutcomes, []string{"faulted", "faulted", "delivered", "delivered"}) {
			t.Errorf("busy's sessions, newest first: %v", busyOutcomes)
		}
		rs := rules(t, base, ta.key)
		var cfg ruleView
		for _, r := range rs {
			if r.Inbox == "cfg-*" {
				cfg = r
			}
		}
		if rs[retry.ID].Used != 3 || rs[lost.ID].Used != 1 || rs[busy.ID].Used != 2 || cfg.Used != 1 || cfg.Times != 1 || len(rs) != 4 {
			t.Errorf("the rules' uses: %+v, want retry 3, lost 1, busy 2, the configured one 1", rs)
		}
		// Disarmed, a rule applies no more.
		if status, body := apiDo(t, http.MethodDelete, base, ta.key, "/api/v1/faults/"+busy.ID, ""); status != http.StatusNoContent {
			t.Errorf("DELETE the busy rule: %d %s", status, body)
		}
		if err := deliverOnce(addr, "busy@inbox.test"); err != nil {
			t.Errorf("busy once the rule is gone: %v", err)
		}
		// Every use is counted in the metrics.
		status, _, metrics := apiGet(t, base, ta.key, "/metrics")
		for _, want := range []string{`burner_faults_injected_total{stage="rcpt"} 6`, `burner_faults_injected_total{stage="data"} 1`} {
			if status != http.StatusOK || !bytes.Contains(metrics, []byte(want)) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		smtplibRetries(t, base, ta.key, addr)
	})
}

// smtplibScript is an application in Python: it sends with smtplib and
// retries a 4xx reply, as an MTA would, and prints each try's outcome.
const smtplibScript = `
import json, smtplib, sys
host, port, rcpt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tries = []
for _ in range(5):
    try:
        with smtplib.SMTP(host, port, timeout=10) as s:
            s.sendmail("app@sender.test", [rcpt], b"Subject: from smtplib\r\n\r\nhello\r\n")
        tries.append(250)
        break
    except smtplib.SMTPRecipientsRefused as e:
        tries.append(e.recipients[rcpt][0])
print(json.dumps(tries))
`

// smtplibRetries has Python's smtplib meet a 451 twice, and reads the
// log of its tries.
func smtplibRetries(t *testing.T, base, key, addr string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is not installed: %v", err)
		}
		t.Logf("python3 is not installed (%v): the smtplib part is left out", err)
		return
	}
	rule := armRule(t, base, key, `{"inbox":"py","stage":"rcpt","reply":"451 4.3.0 Try again later","times":2}`)
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", smtplibScript, host, port, "py@inbox.test").CombinedOutput()
	var tries []int
	if err != nil || json.Unmarshal(out, &tries) != nil {
		t.Fatalf("python3 smtplib: %v\n%s", err, out)
	}
	if !slices.Equal(tries, []int{451, 451, 250}) {
		t.Errorf("smtplib's tries: %v, want 451, 451, 250", tries)
	}
	var outcomes []string
	for _, s := range sessionsOf(t, base, key, "py", 3) {
		outcomes = append(outcomes, s.outcome())
		if s.outcome() == "faulted" && s.Recipients[0].Fault != rule.ID {
			t.Errorf("smtplib's refused try: %+v, want the fault %s", s, rule.ID)
		}
	}
	if !slices.Equal(outcomes, []string{"delivered", "faulted", "faulted"}) {
		t.Errorf("smtplib's sessions, newest first: %v", outcomes)
	}
}

// With faults.enabled = false, the routes answer 404 and no rule applies,
// configured or armed before; the session log still is kept.
func TestFaultsOff(t *testing.T) {
	forEachStore(t, func(t *testing.T, data string) {
		// Armed while on, then the store is served with faults off.
		on := startFaultsApp(t, data, faultsOn)
		armRule(t, "http://"+on.httpLn.Addr().String(), on.key, `{"inbox":"*","stage":"rcpt","reply":"550 5.0.0 never"}`)
		key := on.key
		on.stopNow()
		ta := startFaultsApp(t, data, strings.Replace(faultsOn, "enabled = true", "enabled = false", 1))
		base, addr := "http://"+ta.httpLn.Addr().String(), ta.smtpLn.Addr().String()
		for _, req := range [][3]string{{"GET", "/api/v1/faults", ""}, {"POST", "/api/v1/faults", `{"inbox":"a","stage":"rcpt","reply":"451"}`},
			{"DELETE", "/api/v1/faults/0195f3b0-0000-7000-8000-000000000001", ""}} {
			if status, body := apiDo(t, req[0], base, key, req[1], req[2]); status != http.StatusNotFound || string(body) != "{\"error\":\"Not found.\"}\n" {
				t.Errorf("%s %s with faults off: %d %s, want 404", req[0], req[1], status, body)
			}
		}
		for _, rcpt := range []string{"cfg-1@inbox.test", "any@inbox.test"} {
			if err := deliverOnce(addr, rcpt); err != nil {
				t.Errorf("a message to %s with faults off: %v, want it taken", rcpt, err)
			}
		}
		if s := sessionsOf(t, base, key, "cfg-1", 1); len(s) != 1 || s[0].outcome() != "delivered" {
			t.Errorf("cfg-1's sessions: %+v, want one, delivered", s)
		}
		_, _, info := apiGet(t, base, key, "/api/v1/info")
		if !bytes.Contains(info, []byte(`"faults":false`)) {
			t.Errorf("/api/v1/info: %s, want faults false", info)
		}
	})
}

// [[faults.rules]] are armed once, whatever the starts: a restart keeps
// a rule's uses; a rule no longer configured goes, a new one comes.
func TestFaultsConfigArmedOnce(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	ta := startFaultsApp(t, data, faultsOn)
	key := ta.key
	base := "http://" + ta.httpLn.Addr().String()
	if err := deliverOnce(ta.smtpLn.Addr().String(), "cfg-1@inbox.test"); codeOf(err) != 450 {
		t.Fatalf("cfg-1: %v, want the configured 450", err)
	}
	before := rules(t, base, key)
	ta.stopNow()

	ta = startFaultsApp(t, data, faultsOn)
	base = "http://" + ta.httpLn.Addr().String()
	after := rules(t, base, key)
	if len(after) != 1 || !mapsEqual(before, after) {
		t.Errorf("after a restart: %+v, want the rule as it was, %+v", after, before)
	}
	for _, r := range after {
		if r.Used != 1 {
			t.Errorf("after a restart the rule has %d uses, want 1", r.Used)
		}
	}
	if err := deliverOnce(ta.smtpLn.Addr().String(), "cfg-1@inbox.test"); err != nil {
		t.Errorf("cfg-1 after a restart, its rule spent: %v", err)
	}
	ta.stopNow()

	ta = startFaultsApp(t, data, strings.Replace(faultsOn, "Configured", "Reconfigured", 1))
	now := rules(t, "http://"+ta.httpLn.Addr().String(), key)
	for id, r := range now {
		if _, old := before[id]; old || r.Reply != "450 4.7.1 Reconfigured" || r.Used != 0 || len(now) != 1 {
			t.Errorf("after a change of the configuration: %+v, want the new rule alone, unused", now)
		}
	}
}

func mapsEqual(a, b map[string]ruleView) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Bad [[faults.rules]] stop burner at start, each naming its field.
func TestFaultsConfigValidation(t *testing.T) {
	cfg := writeConfig(t, `[faults]
enabled = true
[[faults.rules]]
inbox = "a*b"
stage = "helo"
reply = "250 OK"
[[faults.rules]]
inbox = "ok"
stage = "data"
reply = "451"
times = -1
delay = "2m"
per_minute = -3
[retention]
sessions_max_age = "-1h"
max_sessions = -1
[smtp]
session_log_rate = -5
`)
	_, err := serveConfig(cfg)
	for _, want := range []string{
		"faults.rules[0].inbox: must be a local part",
		"faults.rules[1].times: must be 0 (until deleted) or more",
		"retention.sessions_max_age: must be",
		"retention.max_sessions: must be 0 (no cap) or more",
		"smtp.session_log_rate: must be 0 (no bound) or more",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("loading bad fault settings: %v; want %q", err, want)
		}
	}
	cfg = writeConfig(t, "[[faults.rules]]\ninbox = \"ok\"\nstage = \"rcpt\"\nreply = \"451\"\nper_minute = -1\n")
	if _, err := serveConfig(cfg); err == nil || !strings.Contains(err.Error(), "faults.rules[0].per_minute: must be 0 (every message) or more") {
		t.Errorf("per_minute = -1: %v; want it named as the file names it", err)
	}
	cfg = writeConfig(t, "[[faults.rules]]\ninbox = \"ok\"\nstage = \"rcpt\"\nreply = \"451\"\nperMinute = 2\n")
	if _, err := serveConfig(cfg); err == nil || !strings.Contains(err.Error(), "perMinute") {
		t.Errorf("perMinute (the API's name) in the file: %v; want an unknown key", err)
	}
}

// spec §13.2: times is counted exactly across nodes. Two `burner serve`
// processes on one database race for a rule's last uses; the rule answers
// exactly times RCPTs in all, and either node's session log lists every
// use.
func TestFaultsTimesAcrossNodes(t *testing.T) {
	dbURL := testDatabase(t)
	var nodes []*nodeProc
	for _, name := range []string{"A", "B"} {
		n := spawnNodeWith(t, name, dbURL, "node = \""+name+"\"\n[faults]\nenabled = true\n")
		n.waitReady(t)
		nodes = append(nodes, n)
	}
	key := nodes[0].firstKey()
	const times = 10
	rule := armRule(t, nodes[0].http, key, fmt.Sprintf(`{"inbox":"race","stage":"rcpt","reply":"451 4.3.0 Try again later","times":%d}`, times))
	var refused, taken atomic.Int32
	var wg sync.WaitGroup
	for w := range 6 { // three senders on each node
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				switch err := deliverOnce(nodes[w%2].smtp, "race@inbox.test"); codeOf(err) {
				case 451:
					refused.Add(1)
				case -1:
					taken.Add(1)
				default:
					t.Errorf("a message to race: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if refused.Load() != times || taken.Load() != 30-times {
		t.Errorf("30 messages over two nodes: %d refused, %d taken; want exactly %d refused", refused.Load(), taken.Load(), times)
	}
	if r := rules(t, nodes[1].http, key)[rule.ID]; r.Used != times {
		t.Errorf("the rule as node B lists it: %+v, want used %d", r, times)
	}
	faulted, byNode := 0, map[string]int{}
	for _, s := range sessionsOf(t, nodes[1].http, key, "race", 30) {
		byNode[s.Node]++
		if s.outcome() == "faulted" && s.Recipients[0].Fault == rule.ID {
			faulted++
		}
	}
	if faulted != times || byNode["A"] != 15 || byNode["B"] != 15 {
		t.Errorf("node B's session log: %d faulted by the rule, sessions by node %v; want %d, and 15 on each", faulted, byNode, times)
	}
}
