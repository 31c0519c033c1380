package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	bolt "go.etcd.io/bbolt"

	"burner/storage"
	"burner/storage/boltdb"
)

// TestEndToEnd sends mail with a real SMTP client to the real daemon and
// reads it back over HTTP, as a user following the README would.
func TestEndToEnd(t *testing.T) {
	ta := startApp(t, "")
	smtpAddr := ta.smtpLn.Addr().String()
	msg := "From: =?utf-8?q?Shop_M=C3=BCller?= <shop@sender.test>\r\n" +
		"To: Alice <alice@inbox.test>\r\n" +
		"Subject: Confirm your account\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n\r\n" +
		"Hello,\r\nconfirm at https://shop.test/confirm?t=42\r\n"
	if err := sendMail(t, smtpAddr, "bounce@sender.test", []string{"Alice@inbox.test", "bob@other.test"}, msg); err != nil {
		t.Fatalf("SendMail: %v", err)
	}

	status, body := ta.get(t, ta.key, "/api/v1/emails?to=alice")
	if status != 200 {
		t.Fatalf("GET list = %d %s", status, body)
	}
	var got []map[string]any
	if err := json.Unmarshal(body, &got); err != nil || len(got) != 1 {
		t.Fatalf("GET list body %s: want one email (%v)", body, err)
	}
	e := got[0]
	if len(e) != 8 {
		t.Errorf("email has %d fields, want exactly 8: %s", len(e), body)
	}
	want := map[string]any{"toAddress": "Alice@inbox.test", "fromAddress": "shop@sender.test", "fromName": "Shop Müller", "subject": "Confirm your account", "read": false}
	for k, v := range want {
		if e[k] != v {
			t.Errorf("email[%q] = %#v, want %#v", k, e[k], v)
		}
	}
	if b, _ := e["body"].(string); !strings.Contains(b, `href="https://shop.test/confirm?t=42"`) {
		t.Errorf("body = %q, want a clickable link", b)
	}
	if ts, _ := e["receivedAt"].(string); !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(ts) {
		t.Errorf("receivedAt = %q, want YYYY-MM-DDTHH:mm:ss.sssZ", ts)
	}
	id, _ := e["id"].(string)
	if status, _ := ta.get(t, ta.key, "/api/v1/emails/"+id); status != 200 {
		t.Errorf("GET email = %d, want 200", status)
	}
	// bob got his own copy; deleting alice's leaves it.
	if status, _ := ta.do(t, http.MethodDelete, ta.key, "/api/v1/emails/"+id); status != 204 {
		t.Errorf("DELETE email = %d, want 204", status)
	}
	if status, body := ta.get(t, ta.key, "/api/v1/emails?to=BOB&body=confirm"); status != 200 || !strings.Contains(string(body), `"toAddress":"bob@other.test"`) {
		t.Errorf("GET bob's inbox = %d %s, want his copy", status, body)
	}
	if status, body := ta.get(t, "", "/api/v1/emails?to=bob"); status != 401 || !strings.Contains(string(body), "Missing or invalid API key.") {
		t.Errorf("GET without key = %d %s, want 401", status, body)
	}

	// RCPT refusals of spec §2, with the real client.
	for _, rcpt := range []string{"carol@elsewhere.test", "bad!char@inbox.test", strings.Repeat("a", 65) + "@inbox.test"} {
		err := sendMail(t, smtpAddr, "x@sender.test", []string{rcpt}, msg)
		var smtpErr *smtp.SMTPError
		if !errors.As(err, &smtpErr) || smtpErr.Code != 550 {
			t.Errorf("SendMail to %q: err = %v, want a 550", rcpt, err)
		}
	}
}

func TestSecondServeRefused(t *testing.T) {
	ta := startApp(t, "")
	cfg, err := serveConfig(ta.config)
	if err != nil {
		t.Fatal(err)
	}
	_, err = start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "another burner") {
		t.Errorf("second start on the same file: err = %v, want a clear refusal", err)
	}
}

// TestStartRefusesNewerFile: a file written by a newer burner is refused
// at start, with both versions named.
func TestStartRefusesNewerFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	bdb, err := bolt.Open(data, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	bdb.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket([]byte("meta"))
		return b.Put([]byte("schema"), []byte{99})
	})
	bdb.Close()
	cfg := defaultConfig()
	cfg.Data = data
	cfg.SMTP.Listen, cfg.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
	_, err = start(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "schema version 99") || !strings.Contains(err.Error(), "reads versions up to ") || !strings.Contains(err.Error(), "newer burner") {
		t.Errorf("start on a file from a newer burner: %v", err)
	}
}

// TestChildServer is not a test on its own: TestKillNine runs the test
// binary again with BURNER_CHILD_DATA set, and this becomes the server.
func TestChildServer(t *testing.T) {
	data := os.Getenv("BURNER_CHILD_DATA")
	if data == "" {
		t.Skip("runs only as TestKillNine's child process")
	}
	cfg := defaultConfig()
	if err := applyEnv(&cfg, os.Environ()); err != nil { // the parent's settings (dns.resolver)
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	cfg.Data = data
	cfg.SMTP.Listen, cfg.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
	a, err := start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("READY %s %s\n", a.smtpLn.Addr(), a.httpLn.Addr())
	a.run(context.Background()) // until SIGKILL
}

// child is burner running as a separate process on a data file.
type child struct {
	cmd            *exec.Cmd
	smtpAddr, http string
}

func startChild(t *testing.T, data string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BURNER_CHILD_DATA="+data)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "READY" {
				ready <- f[1:]
			}
		}
	}()
	select {
	case addrs := <-ready:
		return &child{cmd: cmd, smtpAddr: addrs[0], http: "http://" + addrs[1]}
	case <-time.After(30 * time.Second):
		t.Fatal("child server not ready within 30s")
		return nil
	}
}

// TestKillNine: every message that got 250 is listed after the server is
// killed with SIGKILL mid-stream and started again, at several kill points.
func TestKillNine(t *testing.T) {
	if os.Getenv("BURNER_CHILD_DATA") != "" {
		t.Skip("child process")
	}
	for _, killAfter := range []int{1, 25, 120} {
		t.Run(fmt.Sprint(killAfter), func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "burner.db")
			db, err := boltdb.Open(data, boltdb.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, key, err := db.CreateKey(context.Background(), "test", storage.Scope{})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			srv := startChild(t, data)

			var (
				mu    sync.Mutex
				acked []string
				wg    sync.WaitGroup
			)
			stop := make(chan struct{})
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := smtp.Dial(srv.smtpAddr)
					if err != nil {
						return
					}
					defer c.Close()
					for i := range 10_000 { // bounded; the kill ends it far sooner
						select {
						case <-stop:
							return
						default:
						}
						subject := fmt.Sprintf("[w%d-m%d]", w, i) // brackets: no subject is a substring of another
						msg := "From: a@sender.test\r\nSubject: " + subject + "\r\n\r\nbody\r\n"
						if err := c.SendMail("a@sender.test", []string{"durable@inbox.test"}, strings.NewReader(msg)); err != nil {
							return
						}
						mu.Lock()
						acked = append(acked, subject)
						n := len(acked)
						mu.Unlock()
						if n == killAfter {
							srv.cmd.Process.Signal(syscall.SIGKILL)
						}
					}
				}()
			}
			waited := make(chan struct{})
			go func() { wg.Wait(); close(waited) }()
			select {
			case <-waited:
			case <-time.After(60 * time.Second):
				close(stop)
				srv.cmd.Process.Kill()
				<-waited
			}
			srv.cmd.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(acked) < killAfter {
				t.Fatalf("only %d messages acked before the kill point %d", len(acked), killAfter)
			}

			// Start burner again on the file, and ask it over HTTP.
			again := startChild(t, data)
			for _, subject := range acked {
				req, _ := http.NewRequest("GET", again.http+"/api/v1/emails?to=durable&subject="+url.QueryEscape(subject), nil)
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var got []map[string]any
				err = json.NewDecoder(res.Body).Decode(&got)
				res.Body.Close()
				if err != nil || len(got) != 1 || got[0]["subject"] != subject {
					t.Errorf("message %s got 250 but after kill -9 and a restart the API lists %v (%v)", subject, got, err)
				}
			}
			t.Logf("kill after %d: %d acked, all listed after a restart", killAfter, len(acked))
		})
	}
}

// TestRetentionSweeper: the sweeper runs inside serve and deletes what is
// older than max_age.
func TestRetentionSweeper(t *testing.T) {
	ta := startApp(t, "[retention]\nmax_age = \"200ms\"\nsweep_interval = \"20ms\"\n")
	if err := sendMail(t, ta.smtpLn.Addr().String(), "a@sender.test", []string{"short@inbox.test"}, "Subject: brief\r\n\r\nhi\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, body := ta.get(t, ta.key, "/api/v1/emails?to=short"); !strings.Contains(string(body), "brief") {
		t.Fatalf("the email is not listed right after delivery: %s", body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := ta.get(t, ta.key, "/api/v1/emails?to=short")
		if strings.TrimSpace(string(body)) == "[]" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the email outlived max_age 200ms by 10s: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShutdownLetsDataCommit: a message whose DATA is under way when
// shutdown starts is still accepted and stored; new connections are not.
func TestShutdownLetsDataCommit(t *testing.T) {
	ta := startApp(t, "")
	addr := ta.smtpLn.Addr().String()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mail("a@sender.test", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("inflight@inbox.test", nil); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "Subject: in flight\r\n\r\nhalf")
	ta.cancel() // SIGTERM
	// The listener closes first: poll until a new connection is refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("the SMTP listener still accepts 10s after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	io.WriteString(w, " and the rest\r\n")
	if err := w.Close(); err != nil {
		t.Fatalf("DATA in flight at shutdown: %v, want 250", err)
	}
	c.Quit()
	select {
	case err := <-ta.done:
		ta.done <- err // for the cleanup's stop
		if err != nil {
			t.Fatalf("run returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("burner did not stop within 20s")
	}
	db, err := boltdb.Open(ta.data, boltdb.Options{})
	if err != nil {
		t.Fatalf("reopen after shutdown: %v", err)
	}
	defer db.Close()
	es, err := db.List(context.Background(), storage.Query{LocalPart: "inflight"})
	if err != nil || len(es) != 1 || *es[0].Subject != "in flight" {
		t.Errorf("after shutdown the file holds %+v, %v; want the message that got 250", es, err)
	}
}

func TestMetricsAndHealth(t *testing.T) {
	ta := startApp(t, "")
	if status, body := ta.get(t, "", "/healthz"); status != 200 || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Errorf("GET /healthz = %d %s, want 200 ok", status, body)
	}
	if err := sendMail(t, ta.smtpLn.Addr().String(), "a@sender.test", []string{"m@inbox.test", "n@inbox.test"}, "Subject: count me\r\n\r\nhi\r\n"); err != nil {
		t.Fatal(err)
	}
	sendMail(t, ta.smtpLn.Addr().String(), "a@sender.test", []string{"x@elsewhere.test"}, "Subject: refused\r\n\r\nhi\r\n")
	ta.get(t, ta.key, "/api/v1/emails?to=m")
	if status, _ := ta.get(t, "", "/metrics"); status != 401 {
		t.Errorf("GET /metrics without a key = %d, want 401", status)
	}
	status, body := ta.get(t, ta.key, "/metrics")
	if status != 200 {
		t.Fatalf("GET /metrics = %d", status)
	}
	for _, want := range []string{
		"burner_smtp_sessions_total 2",
		"burner_smtp_messages_accepted_total 1",
		`burner_smtp_rejected_total{reason="recipient_domain"} 1`,
		"burner_smtp_ingest_seconds_count 1",
		"burner_emails_stored 2",
		"burner_inboxes 2",
		`burner_http_requests_total{code="200",route="GET /api/v1/emails"} 1`,
		`burner_http_request_duration_seconds_count{route="GET /api/v1/emails"} 1`,
		"burner_sweeper_deleted_total 0",
		"burner_data_file_bytes ",
		"burner_smtp_sessions_logged ",
		"go_goroutines ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestFirstKeyOnlyAfterBind: the first key, shown only once, is made once
// both listeners are bound (spec §14): a serve that cannot bind its SMTP
// port prints no key and makes none, and the next one, which can, prints
// one that works.
func TestFirstKeyOnlyAfterBind(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := filepath.Join(t.TempDir(), "burner.db")
	args := []string{"serve", "--config", writeConfig(t, ""), "--data", data, "--http", "127.0.0.1:0", "--smtp", busy.Addr().String()}
	n := spawnServe(t, "busy", nil, args...)
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("burner serve on a busy SMTP port still runs after 30 s:\n%s", n.output())
	}
	if out := n.output(); n.cmd.ProcessState.ExitCode() != 1 || !strings.Contains(out, "smtp listen") || keyRE.MatchString(out) || strings.Contains(out, "API key") {
		t.Fatalf("burner serve on a busy SMTP port: exit status %d, stderr:\n%s\nwant status 1, the bind error and no key", n.cmd.ProcessState.ExitCode(), out)
	}
	if out, err := runCmd(t, "keys", "list", "--data", data); err != nil || strings.Contains(out, "default") {
		t.Errorf("burner keys list after the failed start: %q, %v; want no key", out, err)
	}

	busy.Close()
	n = spawnServe(t, "free", nil, args...)
	n.waitReady(t)
	key := n.firstKey()
	if key == "" || !strings.Contains(n.output(), "shown only this once") {
		t.Fatalf("burner serve once the port is free printed no first key:\n%s", n.output())
	}
	status, _, body := apiGet(t, n.http, key, "/api/v1/emails?to=anyone")
	if status != 200 {
		t.Errorf("GET /api/v1/emails with the first key = %d %s, want 200", status, body)
	}
}

// TestFirstKeyJSONBanner: with log.format = "json" the first key comes as
// a JSON log line, whatever log.level says: it is shown only this once.
func TestFirstKeyJSONBanner(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	cfgFile := writeConfig(t, fmt.Sprintf("data = %q\n[smtp]\nlisten = \"127.0.0.1:0\"\n[http]\nlisten = \"127.0.0.1:0\"\n[log]\nformat = \"json\"\nlevel = \"error\"\n", data))
	ta := startAppConfig(t, cfgFile, io.Discard)
	var line struct {
		Level, Msg, Key, KeyName, Help string
	}
	if err := json.Unmarshal([]byte(ta.notice), &line); err != nil || strings.Count(ta.notice, "\n") != 1 {
		t.Fatalf("the first key's notice under log.format = json: %q (%v); want one JSON line", ta.notice, err)
	}
	var named map[string]any
	json.Unmarshal([]byte(ta.notice), &named)
	if line.Level != "INFO" || !strings.Contains(line.Msg, "first API key") || line.Key != ta.key || !keyRE.MatchString(line.Key) ||
		named["key_name"] != "default" || !strings.Contains(line.Help, "burner keys create") {
		t.Errorf("the JSON banner = %s; want level INFO, a message, the key, its name and how to manage keys", ta.notice)
	}
	if status, _ := ta.get(t, ta.key, "/api/v1/emails?to=x"); status != 200 {
		t.Errorf("GET /api/v1/emails with the key of the JSON banner = %d, want 200", status)
	}
}

// TestServeFromEnvironment: a burner configured by its environment alone,
// as a container is (spec §14): its listeners, its data and its log
// format from BURNER_ variables; MCP's new_address on the hostname's
// domain, for there is no inbox domain (spec §11); and `burner health`
// finds its API through the same variable.
func TestServeFromEnvironment(t *testing.T) {
	data := filepath.Join(t.TempDir(), "env.db")
	empty := writeConfig(t, "")
	n := spawnServe(t, "env", []string{
		"BURNER_DATA=" + data,
		"BURNER_SMTP_LISTEN=127.0.0.1:0",
		"BURNER_HTTP_LISTEN=127.0.0.1:0",
		"BURNER_SMTP_HOSTNAME=mx.env.test",
		"BURNER_LOG_FORMAT=json",
		"BURNER_RETENTION_MAX_AGE=1h",
		"BURNER_URL=http://127.0.0.1:1", // the clients' variable: not burner's
	}, "serve", "--config", empty)
	n.waitReady(t)
	key := n.firstKey()
	if key == "" {
		t.Fatalf("burner serve from the environment printed no key:\n%s", n.output())
	}
	for _, line := range strings.Split(strings.TrimSpace(n.output()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("BURNER_LOG_FORMAT=json, yet stderr has a line that is not JSON: %q", line)
		}
	}
	if _, err := os.Stat(data); err != nil {
		t.Errorf("BURNER_DATA=%s: %v", data, err)
	}

	req, _ := http.NewRequest("POST", n.http+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"new_address","arguments":{}}}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var answer struct {
		Result struct {
			IsError           bool
			StructuredContent struct{ Address string }
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil || answer.Result.IsError || !strings.HasSuffix(answer.Result.StructuredContent.Address, "@mx.env.test") {
		t.Errorf("MCP new_address on a serve without inbox domains = %+v (%v); want an address @mx.env.test", answer, err)
	}

	t.Setenv("BURNER_HTTP_LISTEN", strings.TrimPrefix(n.http, "http://"))
	out, err := runCmd(t, "health", "--config", empty)
	if err != nil || !strings.Contains(out, n.http+"/healthz: 200 OK") {
		t.Errorf("burner health with BURNER_HTTP_LISTEN=%s: %q, %v; want 200 OK", n.http, out, err)
	}
}

// newSecret returns a key's secret as burner would make one: bnr_ and 32
// random bytes in base64url, for BURNER_KEY.
func newSecret(t *testing.T) string {
	t.Helper()
	var b [32]byte
	rand.Read(b[:])
	return storage.KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// keyNames returns the names of the keys `burner keys list` shows for
// data, in its order.
func keyNames(t *testing.T, data string) []string {
	t.Helper()
	out, err := runCmd(t, "keys", "list", "--data", data)
	if err != nil {
		t.Fatalf("burner keys list: %v", err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 {
			names = append(names, f[1])
		}
	}
	return names
}

// infoKeyName returns the name GET /api/v1/info gives the key secret.
func infoKeyName(t *testing.T, base, secret string) string {
	t.Helper()
	status, _, body := apiGet(t, base, secret, "/api/v1/info")
	var info struct{ Key struct{ Name string } }
	if err := json.Unmarshal(body, &info); status != http.StatusOK || err != nil {
		t.Fatalf("GET /api/v1/info = %d %s (%v), want 200", status, body, err)
	}
	return info.Key.Name
}

// TestEnvKey: with BURNER_KEY (spec §14) serve makes a key with that
// secret, named env, and neither makes nor prints a first key; started
// again it finds the key and makes none; with another BURNER_KEY (a
// rotated secret) it makes a second key under another name and warns
// that the older one still works. No secret is ever printed.
func TestEnvKey(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	args := []string{"serve", "--config", writeConfig(t, ""), "--data", data, "--http", "127.0.0.1:0", "--smtp", "127.0.0.1:0"}
	secret := newSecret(t)
	run := func(name, secret string) string {
		n := spawnServe(t, name, []string{"BURNER_KEY=" + secret}, args...)
		n.waitReady(t)
		defer n.stop()
		if name := infoKeyName(t, n.http, secret); !strings.HasPrefix(name, "env") {
			t.Errorf("%s: the key of BURNER_KEY is named %q, want env…", n.name, name)
		}
		out := n.output()
		if keyRE.MatchString(out) || strings.Contains(out, "first API key") {
			t.Errorf("%s: serve with BURNER_KEY printed a key:\n%s", n.name, out)
		}
		return out
	}

	out := run("first", secret)
	if !strings.Contains(out, "created the API key of BURNER_KEY") || !strings.Contains(out, "key_name=env ") {
		t.Errorf("the first start with BURNER_KEY does not say it created the key env:\n%s", out)
	}
	if names := keyNames(t, data); !slices.Equal(names, []string{"env"}) {
		t.Errorf("keys after the first start with BURNER_KEY: %v, want [env]", names)
	}
	if out := run("again", secret); !strings.Contains(out, "the API key of BURNER_KEY exists") {
		t.Errorf("a second start with the same BURNER_KEY does not say the key exists:\n%s", out)
	}
	if names := keyNames(t, data); !slices.Equal(names, []string{"env"}) {
		t.Errorf("keys after a second start with the same BURNER_KEY: %v, want [env]", names)
	}

	rotated := newSecret(t)
	out = run("rotated", rotated)
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "works until it is revoked") || !strings.Contains(out, "burner keys revoke env") {
		t.Errorf("a start with another BURNER_KEY does not warn that the older key still works:\n%s", out)
	}
	names := keyNames(t, data)
	if len(names) != 2 || names[0] != "env" || !regexp.MustCompile(`^env-[0-9a-f]{8}$`).MatchString(names[1]) {
		t.Errorf("keys after a start with another BURNER_KEY: %v, want env and env-<8 hex digits>", names)
	}
	// Both keys work, each under its own name.
	n := spawnServe(t, "both", nil, args...)
	n.waitReady(t)
	if got := infoKeyName(t, n.http, secret); got != "env" {
		t.Errorf("the first BURNER_KEY is now key %q, want env", got)
	}
	if got := infoKeyName(t, n.http, rotated); got != names[1] {
		t.Errorf("the rotated BURNER_KEY is key %q, want %s", got, names[1])
	}
	if out := n.output(); keyRE.MatchString(out) {
		t.Errorf("serve without BURNER_KEY on a store with keys printed a key:\n%s", out)
	}
}

// TestEnvKeyRefused: a BURNER_KEY burner could not have made stops serve
// at once, with an error that names the variable but not its value, and
// before any data file is made.
func TestEnvKeyRefused(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	bad := "bnr_NotLongEnoughToBeAKey-butRecognizable"
	n := spawnServe(t, "bad", []string{"BURNER_KEY=" + bad}, "serve", "--config", writeConfig(t, ""), "--data", data,
		"--http", "127.0.0.1:0", "--smtp", "127.0.0.1:0")
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("burner serve with a bad BURNER_KEY still runs after 30 s:\n%s", n.output())
	}
	out := n.output()
	if n.cmd.ProcessState.ExitCode() != 1 || !strings.Contains(out, "BURNER_KEY is not a key burner accepts") || !strings.Contains(out, "43 base64url") {
		t.Errorf("burner serve with BURNER_KEY=%s: exit status %d, stderr:\n%s\nwant status 1 and an error naming BURNER_KEY", bad, n.cmd.ProcessState.ExitCode(), out)
	}
	if strings.Contains(out, "Recognizable") {
		t.Errorf("the error shows the value of BURNER_KEY:\n%s", out)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve refused BURNER_KEY, yet made the data file: %v", err)
	}

	// The forms a copied secret takes, refused alike (in-process).
	good := newSecret(t)
	for _, key := range []string{good + " ", " " + good, `"` + good + `"`, good + "\n", good[:len(good)-1], "BNR_" + good[4:], good[:10] + "+" + good[11:]} {
		cfg := defaultConfig()
		cfg.Data, cfg.Key = filepath.Join(t.TempDir(), "burner.db"), key
		cfg.SMTP.Listen, cfg.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
		if _, err := start(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard); !errors.Is(err, errBadEnvKey) {
			t.Errorf("start with BURNER_KEY=%q: %v, want errBadEnvKey", key, err)
		}
	}
}

// TestEnvKeyConcurrent: starts that race to make the key of one
// BURNER_KEY (nodes of one database) make one key, and none fails.
func TestEnvKeyConcurrent(t *testing.T) {
	db, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secret := newSecret(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- ensureEnvKey(context.Background(), db, secret, slog.New(slog.DiscardHandler)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("ensureEnvKey: %v", err)
		}
	}
	if keys, err := db.Keys(context.Background()); err != nil || len(keys) != 1 || keys[0].Name != "env" {
		t.Errorf("Keys after 8 racing ensureEnvKey = %+v, %v; want one key, env", keys, err)
	}
}
