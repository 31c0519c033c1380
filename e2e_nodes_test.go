package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// End-to-end tests of spec §10 with real `burner serve` processes on one
// PostgreSQL database (helpers in e2e_pg_test.go).

// startNodes starts nodes on dbURL one after the other, and returns them
// once all serve, with the first API key, which the first node created.
func startNodes(t *testing.T, dbURL string, names ...string) ([]*nodeProc, string) {
	t.Helper()
	var nodes []*nodeProc
	for _, name := range names {
		n := spawnNode(t, name, dbURL)
		n.waitReady(t)
		nodes = append(nodes, n)
	}
	key := nodes[0].firstKey()
	if key == "" {
		t.Fatal("the first node on a new database printed no first key")
	}
	for _, n := range nodes[1:] {
		if n.firstKey() != "" {
			t.Errorf("node %s created another first key on a database that had one", n.name)
		}
	}
	return nodes, key
}

// TestNodesStartTogether: nodes started at the same time on a new
// database all serve, and exactly one of them creates the first key
// (spec §10: once, by whichever node starts first, under the same lock as
// the schema).
func TestNodesStartTogether(t *testing.T) {
	dbURL := testDatabase(t)
	nodes := []*nodeProc{spawnNode(t, "A", dbURL), spawnNode(t, "B", dbURL), spawnNode(t, "C", dbURL)}
	var created []string
	for _, n := range nodes {
		n.waitReady(t)
		if n.firstKey() != "" {
			created = append(created, n.name)
		}
	}
	if len(created) != 1 {
		t.Fatalf("nodes %v created a first key, want exactly one node", created)
	}
}

// TestTwoNodesOneDatabase: what one node takes in, the other serves
// (spec §10): mail, wake-ups of a long poll, revocations, UI sessions.
func TestTwoNodesOneDatabase(t *testing.T) {
	dbURL := testDatabase(t)
	nodes, key := startNodes(t, dbURL, "A", "B")
	a, b := nodes[0], nodes[1]

	// Mail in on A is listed by B, as A lists it, byte for byte.
	msg := "From: Shop <shop@sender.test>\r\nTo: alice@inbox.test\r\nSubject: Your code\r\n\r\nYour code is 424242.\r\n"
	if err := sendMail(t, a.smtp, "shop@sender.test", []string{"alice@inbox.test"}, msg); err != nil {
		t.Fatalf("SendMail to A: %v", err)
	}
	statusA, _, listA := apiGet(t, a.http, key, "/api/v1/emails?to=alice")
	statusB, _, listB := apiGet(t, b.http, key, "/api/v1/emails?to=alice")
	if statusB != 200 || !strings.Contains(string(listB), `"subject":"Your code"`) {
		t.Errorf("B lists alice's inbox right after the 250 of A: %d %s, want the email", statusB, listB)
	}
	if statusA != statusB || !bytes.Equal(listA, listB) {
		t.Errorf("A and B list alice's inbox differently:\nA: %d %s\nB: %d %s", statusA, listA, statusB, listB)
	}

	// A long poll on B is answered when mail arrives on A: pushed through
	// the database, well before the wait of 10 s runs out.
	var latencies []time.Duration
	for round := range 5 {
		inbox := fmt.Sprintf("waiter%d", round)
		latencies = append(latencies, wakeAcrossNodes(t, a, b, key, inbox))
	}
	slices.Sort(latencies)
	t.Logf("wake-up from the end of DATA on A to the answer of wait=10 on B: median %v, max %v, over %d rounds",
		latencies[len(latencies)/2], latencies[len(latencies)-1], len(latencies))
	if worst := latencies[len(latencies)-1]; worst > time.Second {
		t.Errorf("a wait on B was answered %v after the delivery on A, want within 1 s (spec §10)", worst)
	}

	// A UI login on A is valid on B.
	session := uiLogin(t, a.http, key)
	if status, loc, body := uiGet(t, b.http, "/", session); status != 200 || !strings.Contains(body, `action="/logout"`) {
		t.Errorf("GET / on B with A's session: %d (Location %q), want 200 and a logged-in page", status, loc)
	}
	if status, loc, _ := uiGet(t, b.http, "/", ""); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
		t.Errorf("GET / on B without a session: %d Location %q, want 303 to /login", status, loc)
	}

	// A key revoked with the CLI, which opens the database itself (a node
	// on PostgreSQL has no control socket), is refused by B within 1 s,
	// and its UI session, made on A, ends on B too.
	out, err := runCmd(t, "keys", "create", "--name", "revokee", "--data", dbURL)
	revokee := keyRE.FindString(out)
	if err != nil || revokee == "" {
		t.Fatalf("burner keys create: %v\n%s", err, out)
	}
	if status, _, body := apiGet(t, b.http, revokee, "/api/v1/emails?to=alice"); status != 200 {
		t.Fatalf("B with a key just created on the database: %d %s, want 200", status, body)
	}
	revokedSession := uiLogin(t, a.http, revokee)
	if status, _, _ := uiGet(t, b.http, "/", revokedSession); status != 200 {
		t.Fatalf("GET / on B with the session of the key to revoke: %d, want 200", status)
	}
	if out, err := runCmd(t, "keys", "revoke", "revokee", "--data", dbURL); err != nil || !strings.Contains(out, "Revoked") {
		t.Fatalf("burner keys revoke: %v\n%s", err, out)
	}
	revoked := time.Now()
	waitFor(t, time.Second, "B refuses the revoked key (spec §10: within 1 s)", func() bool {
		status, _, _ := apiGet(t, b.http, revokee, "/api/v1/emails?to=alice")
		return status == http.StatusUnauthorized
	})
	t.Logf("B refused the revoked key %v after the revocation", time.Since(revoked))
	status, _, body := apiGet(t, b.http, revokee, "/api/v1/emails?to=alice")
	if status != http.StatusUnauthorized || strings.TrimSpace(string(body)) != `{"error":"Missing or invalid API key."}` {
		t.Errorf("B with the revoked key: %d %s, want 401", status, body)
	}
	if status, loc, _ := uiGet(t, b.http, "/", revokedSession); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
		t.Errorf("GET / on B with the session of a revoked key: %d Location %q, want 303 to /login", status, loc)
	}
	if status, _, _ := apiGet(t, a.http, key, "/api/v1/emails?to=alice"); status != 200 {
		t.Errorf("A with the key that stays: %d, want 200", status)
	}
}

// wakeAcrossNodes holds a wait=10 on b for inbox, sends mail to it through
// a, and returns the time from the end of its DATA to b's answer: A's
// commit, the notification and B's list. (B may answer before A's 250
// reaches the client, which is why it is not the start.)
func wakeAcrossNodes(t *testing.T, a, b *nodeProc, key, inbox string) time.Duration {
	t.Helper()
	type answer struct {
		at     time.Time
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	wrote := make(chan struct{})
	req, _ := http.NewRequest(http.MethodGet, b.http+"/api/v1/emails?to="+inbox+"&wait=10", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) },
	}))
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		answered <- answer{at: time.Now(), status: res.StatusCode, body: body, err: err}
	}()
	// Mail only once B has the request; the SMTP dialogue before the
	// commit leaves B ample time to start waiting.
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll was not sent within 10 s")
	}
	c, err := smtp.Dial(a.smtp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent, err := sendOne(c, inbox)
	if err != nil {
		t.Fatalf("send to A: %v", err)
	}
	select {
	case ans := <-answered:
		if ans.err != nil || ans.status != 200 || !strings.Contains(string(ans.body), `"subject":"`+inbox+`"`) {
			t.Fatalf("wait=10 on B: %d %s (%v), want the email delivered on A", ans.status, ans.body, ans.err)
		}
		return ans.at.Sub(sent)
	case <-time.After(15 * time.Second):
		t.Fatal("wait=10 on B unanswered 15 s after the delivery on A")
		return 0
	}
}

var csrfFieldRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// uiLogin logs in to the web UI at base with key, as a browser does, and
// returns the session cookie.
func uiLogin(t *testing.T, base, key string) string {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfFieldRE.FindSubmatch(page)
	var csrf *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "burner_csrf" {
			csrf = c
		}
	}
	if res.StatusCode != 200 || m == nil || csrf == nil {
		t.Fatalf("GET /login: %d, csrf field %q, cookie %v; want the form", res.StatusCode, m, csrf)
	}
	form := url.Values{"csrf": {string(m[1])}, "key": {key}, "next": {"/"}}
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(csrf)
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "burner_session" && c.Value != "" && c.HttpOnly && c.SameSite == http.SameSiteStrictMode {
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
				t.Errorf("POST /login: %d Location %q, want 303 to /", res.StatusCode, res.Header.Get("Location"))
			}
			return c.Value
		}
	}
	t.Fatalf("POST /login: %d, cookies %v; want an HttpOnly, SameSite=Strict session cookie", res.StatusCode, res.Cookies())
	return ""
}

// uiGet asks for a UI page with the session cookie (none when "") and
// returns the status, the Location and the page.
func uiGet(t *testing.T, base, path, session string) (int, string, string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	if session != "" {
		req.AddCookie(&http.Cookie{Name: "burner_session", Value: session})
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", base+path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(body)
}

// TestKillNineOfANode: kill -9 of a node in the middle of a stream from
// several SMTP connections loses nothing that got a 250; the other node
// lists all of it.
func TestKillNineOfANode(t *testing.T) {
	dbURL := testDatabase(t)
	nodes, key := startNodes(t, dbURL, "A", "B")
	a, b := nodes[0], nodes[1]
	const killAfter = 60
	var once sync.Once
	stream := startStream(a.smtp, 4, func(n int) {
		if n >= killAfter {
			once.Do(func() { a.cmd.Process.Kill() })
		}
	})
	waitFor(t, 30*time.Second, "A is killed after its 60th 250", func() bool {
		select {
		case <-a.exited:
			return true
		default:
			return false
		}
	})
	acks, replies := stream.stop()
	if len(acks) < killAfter {
		t.Fatalf("%d messages got a 250 before the kill, want at least %d", len(acks), killAfter)
	}
	inboxes := make([]string, len(acks))
	for i, ak := range acks {
		inboxes[i] = ak.inbox
	}
	checkListed(t, b.http, key, inboxes)
	t.Logf("kill -9 of A after %d 250s: all %d listed by B; refusals and failures after the kill: %v", killAfter, len(acks), replies)
}

// TestDatabaseRestartUnderLoad stops the database under a node taking
// mail, and starts it again (spec §10): meanwhile SMTP answers 451 4.3.0
// and the API 503; afterwards the node serves again by itself within 15
// s, and every message that got a 250 is there. Once with a fast
// shutdown, once with kill -9 of the postmaster.
func TestDatabaseRestartUnderLoad(t *testing.T) {
	c := newCluster(t)
	for _, tc := range []struct {
		name string
		stop func(*testing.T)
		// orphans: after kill -9 of the postmaster, the backends of open
		// connections live on until they notice, and may still commit;
		// so a 250 right after the kill is right, if the message is kept.
		orphans bool
	}{
		{"fast", c.stopFast, false},
		{"kill9", c.killPostmaster, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbURL := c.createDatabase(t, "burner_"+tc.name)
			nodes, key := startNodes(t, dbURL, "node")
			n := nodes[0]
			stream := startStream(n.smtp, 2, nil)
			waitFor(t, 20*time.Second, "20 messages get a 250 before the outage", func() bool { return stream.count() >= 20 })
			// A request now: the node may serve this key from memory
			// during the outage (spec §10), so the 503 below is the
			// store's, not a 401.
			if status, _, body := apiGet(t, n.http, key, "/api/v1/emails?to=s0-m0"); status != 200 {
				t.Fatalf("GET before the outage: %d %s", status, body)
			}

			tc.stop(t)
			stopped := time.Now()
			t.Logf("PostgreSQL stopped (%s) after %d 250s", tc.name, stream.count())
			probed := checkOutage(t, n, key, tc.orphans)
			// Keep it down while the stream meets the outage, not just the probes.
			waitFor(t, 10*time.Second, "the stream gets 20 × 451 4.3.0 while PostgreSQL is down", func() bool {
				return stream.replyCount("451 4.3.0") >= 20
			})
			restart := time.Now()
			c.start(t)
			up := time.Now()
			t.Logf("outage: %v; PostgreSQL took %v to start", restart.Sub(stopped), up.Sub(restart))

			// spec §10: it serves again within 15 s of the database's
			// return: /healthz, the API and a new SMTP session.
			waitFor(t, 15*time.Second, "the node serves again after PostgreSQL's return", func() bool {
				if status, _, _ := apiGet(t, n.http, "", "/healthz"); status != 200 {
					return false
				}
				if status, _, _ := apiGet(t, n.http, key, "/api/v1/emails?to=s0-m0"); status != 200 {
					return false
				}
				return sendMail(t, n.smtp, "probe@sender.test", []string{"probe-after@inbox.test"}, "Subject: after\r\n\r\nhi\r\n") == nil
			})
			t.Logf("the node served again %v after PostgreSQL accepted connections", time.Since(up))
			before := stream.count()
			waitFor(t, 15*time.Second, "the stream gets 20 more 250s after the restart", func() bool { return stream.count() >= before+20 })
			acks, replies := stream.stop()

			inboxes := probed
			for _, a := range acks {
				inboxes = append(inboxes, a.inbox)
				// Sent once PostgreSQL had stopped, acknowledged before it came back.
				if !tc.orphans && a.sent.After(stopped) && a.acked.Before(restart) {
					t.Errorf("%s got a 250 while PostgreSQL was down (DATA ended %v after the stop, 250 %v before the restart)",
						a.inbox, a.sent.Sub(stopped), restart.Sub(a.acked))
				}
			}
			checkListed(t, n.http, key, inboxes)
			for reply := range replies {
				if reply != "451 4.3.0" && reply != "other" && reply != "dial" {
					t.Errorf("the stream got %d × %q, want only 250 or 451 4.3.0", replies[reply], reply)
				}
			}
			t.Logf("%d messages of the stream and %d probes during the outage got a 250, all listed after the restart; refusals: %v",
				len(acks), len(probed), replies)
		})
	}
}

// checkOutage checks what the node answers while its database is down:
// 451 4.3.0 at the end of DATA, 503 with Retry-After from the API, 503
// from /healthz (spec §10). Each is polled until it holds: the node
// learns of the outage from a failed call. With orphans, a probe may get
// a 250 from a backend that outlived its postmaster: checkOutage returns
// the inboxes of those, which must be kept; without, a 250 fails the test.
func checkOutage(t *testing.T, n *nodeProc, key string, orphans bool) (probed []string) {
	t.Helper()
	var c *smtp.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	waitFor(t, 10*time.Second, "SMTP answers 451 4.3.0 while PostgreSQL is down", func() bool {
		if c == nil {
			var err error
			if c, err = smtp.Dial(n.smtp); err != nil {
				t.Fatalf("the node takes no SMTP connection while PostgreSQL is down: %v", err)
			}
		}
		inbox := fmt.Sprintf("probe%d", len(probed))
		_, err := sendOne(c, inbox)
		if err == nil {
			if !orphans {
				t.Fatal("a message got a 250 while PostgreSQL was down")
			}
			probed = append(probed, inbox)
			return false
		}
		c.Close()
		c = nil
		var se *smtp.SMTPError
		if !errors.As(err, &se) || se.Code != 451 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 0}) {
			t.Fatalf("the end of DATA while PostgreSQL is down: %v, want 451 4.3.0", err)
		}
		return true
	})
	var (
		status int
		header http.Header
		body   []byte
	)
	waitFor(t, 10*time.Second, "the API answers 503 while PostgreSQL is down", func() bool {
		status, header, body = apiGet(t, n.http, key, "/api/v1/emails?to=s0-m0")
		if status != http.StatusOK && status != http.StatusServiceUnavailable {
			t.Fatalf("GET while PostgreSQL is down: %d %s, want 503", status, body)
		}
		return status == http.StatusServiceUnavailable
	})
	var e map[string]any
	if json.Unmarshal(body, &e) != nil || len(e) != 1 || e["error"] != "Storage unavailable." {
		t.Errorf("the API's 503 body = %s, want {\"error\": \"Storage unavailable.\"}", body)
	}
	if ra := header.Get("Retry-After"); ra != "5" {
		t.Errorf("the API's 503 has Retry-After %q, want 5", ra)
	}
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("the API's 503 has Content-Type %q, want JSON", ct)
	}
	// A key the node has not checked needs the database too: 503, not the
	// 401 that would tell the client its key is wrong.
	if status, _, body := apiGet(t, n.http, "bnr_"+strings.Repeat("A", 43), "/api/v1/emails?to=s0-m0"); status != http.StatusServiceUnavailable {
		t.Errorf("GET with a key the node has not checked, while PostgreSQL is down: %d %s, want 503", status, body)
	}
	waitFor(t, 10*time.Second, "/healthz answers 503 while PostgreSQL is down", func() bool {
		status, _, body = apiGet(t, n.http, "", "/healthz")
		return status == http.StatusServiceUnavailable
	})
	if strings.TrimSpace(string(body)) != `{"status":"unavailable"}` {
		t.Errorf("/healthz's 503 body = %s, want {\"status\":\"unavailable\"}", body)
	}
	return probed
}

// TestEnvKeyNodesStartTogether: nodes started at once on a new database
// with one BURNER_KEY (spec §14) make one key, named env, which each of
// them takes, and none makes or prints a first key.
func TestEnvKeyNodesStartTogether(t *testing.T) {
	dbURL := testDatabase(t)
	secret := newSecret(t)
	cfg := writeConfig(t, "")
	var nodes []*nodeProc
	for _, name := range []string{"A", "B"} {
		nodes = append(nodes, spawnServe(t, name, []string{"BURNER_KEY=" + secret}, "serve", "--config", cfg, "--data", dbURL,
			"--http", "127.0.0.1:0", "--smtp", "127.0.0.1:0", "--domain", "inbox.test"))
	}
	for _, n := range nodes {
		n.waitReady(t)
		if got := infoKeyName(t, n.http, secret); got != "env" {
			t.Errorf("node %s: the key of BURNER_KEY is %q, want env", n.name, got)
		}
		if out := n.output(); keyRE.MatchString(out) {
			t.Errorf("node %s printed a key:\n%s", n.name, out)
		}
	}
	if names := keyNames(t, dbURL); !slices.Equal(names, []string{"env"}) {
		t.Errorf("keys after two nodes started with one BURNER_KEY: %v, want [env]", names)
	}
}
