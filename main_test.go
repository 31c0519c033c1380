package main

import (
	"bufio"
	"bytes"
	"context"
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
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/emersion/go-smtp"

	"burner/storage"
)

func TestConfigExample(t *testing.T) {
	var got Config
	md, err := toml.DecodeFile("config.example.toml", &got)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Errorf("config.example.toml has keys Config does not know: %v", u)
	}
	if want := defaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("config.example.toml = %+v,\nwant defaultConfig() = %+v", got, want)
	}
	// Every key of Config appears in the example, so none goes undocumented.
	raw, _ := os.ReadFile("config.example.toml")
	for _, key := range tomlKeys(reflect.TypeOf(Config{})) {
		if !regexp.MustCompile(`(?m)^` + key + ` = `).Match(raw) {
			t.Errorf("config.example.toml does not document %q", key)
		}
	}
}

// tomlKeys returns the toml names of the leaf fields of a config struct.
func tomlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(duration{}) {
			keys = append(keys, tomlKeys(f.Type)...)
			continue
		}
		keys = append(keys, f.Tag.Get("toml"))
	}
	return keys
}

// runCmd runs the CLI with args and returns its stdout.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "burner.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	cfgFile := writeConfig(t, fmt.Sprintf("data = %q\n[smtp]\nlisten = \"127.0.0.1:2626\"\ndomains = [\"a.test\"]\n", filepath.Join(dir, "f.db")))

	cmd := newServeCmd()
	cmd.Flags().String("config", "", "")
	if err := cmd.ParseFlags([]string{"--config", cfgFile, "--smtp", "127.0.0.1:2727", "--domain", "b.test", "--domain", "c.test"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data != filepath.Join(dir, "f.db") || cfg.SMTP.Listen != "127.0.0.1:2727" ||
		!reflect.DeepEqual(cfg.SMTP.Domains, []string{"b.test", "c.test"}) || cfg.HTTP.Listen != "127.0.0.1:8080" {
		t.Errorf("loadConfig = %+v; want data from the file, smtp and domains from flags, http by default", cfg)
	}

	for _, tc := range []struct{ file, want string }{
		{"[smtp]\nlisten = \"x\"\nmax_recipients = 0\n", "smtp.listen"},
		{"[smtp]\nlisten = \"x\"\nmax_recipients = 0\n", "smtp.max_recipients"}, // every problem at once
		{"[smtp]\nlistn = \"127.0.0.1:25\"\n", "unknown key(s): smtp.listn"},
		{"[retention]\nmax_age = \"a week\"\n", `"a week" is not a duration`},
		{"[retention]\nmax_age = \"-1h\"\n", "retention.max_age"},
		{"[smtp]\ndata_timeout = \"0\"\n", "smtp.data_timeout: must be a positive duration"},
		{"[log]\nformat = \"xml\"\nlevel = \"loud\"\n", "log.format"},
		{"[log]\nformat = \"xml\"\nlevel = \"loud\"\n", "log.level"},
		{"[http]\nmax_query_bytes = 0\n", "http.max_query_bytes"},
		{"[smtp]\ntls_cert = \"c.pem\"\n", "tls_cert and smtp.tls_key"},
		{"data = \n", "config"},
	} {
		_, err := runCmd(t, "keys", "list", "--config", writeConfig(t, tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: err = %v, want it to mention %q", tc.file, err, tc.want)
		}
	}
	if _, err := runCmd(t, "keys", "list", "--config", filepath.Join(dir, "missing.toml")); err == nil {
		t.Error("an explicit --config that does not exist was accepted")
	}
}

func TestVersion(t *testing.T) {
	out, err := runCmd(t, "version")
	if err != nil || !strings.HasPrefix(out, "burner ") {
		t.Errorf("burner version = %q, %v; want \"burner <version>\"", out, err)
	}
}

// testApp is a burner started in-process on loopback ports.
type testApp struct {
	*app
	config string // the config file the CLI can be pointed at
	data   string // the data file
	key    string // the first API key, printed at start
	notice string // what start printed for the operator
	cancel context.CancelFunc
	done   chan error
}

var keyRE = regexp.MustCompile(`bnr_[A-Za-z0-9_-]{43}`)

// serveConfig loads cfgFile as `burner serve --config cfgFile` would.
func serveConfig(cfgFile string) (Config, error) {
	cmd := newServeCmd()
	cmd.Flags().String("config", "", "")
	if err := cmd.ParseFlags([]string{"--config", cfgFile}); err != nil {
		return Config{}, err
	}
	return loadConfig(cmd)
}

// startApp starts burner in-process on loopback ports, inbox domains
// inbox.test and other.test, a new data file, and the config lines extra;
// it checks that start printed a first key.
func startApp(t *testing.T, extra string) *testApp {
	t.Helper()
	data := filepath.Join(t.TempDir(), "burner.db")
	cfgFile := writeConfig(t, fmt.Sprintf("data = %q\n%s[smtp]\nlisten = \"127.0.0.1:0\"\ndomains = [\"inbox.test\", \"Other.Test\"]\n[http]\nlisten = \"127.0.0.1:0\"\n", data, extra))
	ta := startAppConfig(t, cfgFile, io.Discard)
	if ta.key == "" || !strings.Contains(ta.notice, "burner keys") {
		t.Fatalf("start printed %q; want the first key and how to manage keys", ta.notice)
	}
	return ta
}

// startAppConfig starts burner in-process on the config file cfgFile,
// logging to log and to the test, and returns it with the first key it
// printed ("" when the file had keys already).
func startAppConfig(t *testing.T, cfgFile string, log io.Writer) *testApp {
	t.Helper()
	cfg, err := serveConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	var notice bytes.Buffer
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(log, t.Output()), nil))
	a, err := start(context.Background(), cfg, logger, &notice)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ta := &testApp{app: a, config: cfgFile, data: cfg.Data, key: keyRE.FindString(notice.String()), notice: notice.String(), cancel: cancel, done: make(chan error, 1)}
	go func() { ta.done <- a.run(ctx) }()
	t.Cleanup(ta.stop)
	return ta
}

func (ta *testApp) stop() {
	ta.cancel()
	select {
	case <-ta.done:
	case <-time.After(20 * time.Second):
		panic("burner did not shut down within 20s")
	}
}

func (ta *testApp) get(t *testing.T, key, path string) (int, []byte) {
	t.Helper()
	return ta.do(t, http.MethodGet, key, path)
}

func (ta *testApp) do(t *testing.T, method, key, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+ta.httpLn.Addr().String()+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func sendMail(t *testing.T, addr, from string, to []string, msg string) error {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatalf("smtp.Dial(%s): %v", addr, err)
	}
	defer c.Close()
	if err := c.SendMail(from, to, strings.NewReader(msg)); err != nil {
		return err
	}
	return c.Quit()
}

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

	// RCPT refusals of SPEC §2, with the real client.
	for _, rcpt := range []string{"carol@elsewhere.test", "bad!char@inbox.test", strings.Repeat("a", 65) + "@inbox.test"} {
		err := sendMail(t, smtpAddr, "x@sender.test", []string{rcpt}, msg)
		var smtpErr *smtp.SMTPError
		if !errors.As(err, &smtpErr) || smtpErr.Code != 550 {
			t.Errorf("SendMail to %q: err = %v, want a 550", rcpt, err)
		}
	}
}

// TestKeysAgainstRunningServer manages keys with the CLI while serve holds
// the file: the CLI goes through the control socket and changes take effect
// at once.
func TestKeysAgainstRunningServer(t *testing.T) {
	ta := startApp(t, "")
	out, err := runCmd(t, "keys", "create", "--name", "ci", "--config", ta.config)
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if !keyRE.MatchString(key) || key != keyRE.FindString(key) {
		t.Fatalf("keys create printed %q; want the key alone on the last line", out)
	}
	if status, body := ta.get(t, key, "/api/v1/emails?to=x"); status != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("GET with the new key = %d %s, want 200 []", status, body)
	}
	out, err = runCmd(t, "keys", "list", "--config", ta.config)
	if err != nil || !strings.Contains(out, "ci") || !strings.Contains(out, "default") || strings.Contains(out, "bnr_") {
		t.Errorf("keys list = %q, %v; want both keys and no secret", out, err)
	}
	if _, err := runCmd(t, "keys", "create", "--name", "ci", "--config", ta.config); err == nil {
		t.Error("keys create with a taken name succeeded")
	}
	if out, err := runCmd(t, "keys", "revoke", "ci", "--config", ta.config); err != nil || !strings.Contains(out, "Revoked") {
		t.Fatalf("keys revoke ci = %q, %v", out, err)
	}
	if status, _ := ta.get(t, key, "/api/v1/emails?to=x"); status != 401 {
		t.Errorf("GET with the revoked key = %d, want 401 at once", status)
	}
	if _, err := runCmd(t, "keys", "revoke", "ci", "--config", ta.config); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("revoking twice: err = %v, want no key", err)
	}
}

// TestKeysWithoutServer manages keys by opening the file directly.
func TestKeysWithoutServer(t *testing.T) {
	data := filepath.Join(t.TempDir(), "burner.db")
	cfg := writeConfig(t, fmt.Sprintf("data = %q\n", data))
	out, err := runCmd(t, "keys", "create", "--name", "offline", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	secret := lines[len(lines)-1]
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := db.Authenticate(context.Background(), secret); err != nil || k.Name != "offline" {
		t.Errorf("Authenticate(printed key) = %+v, %v; want key offline", k, err)
	}
	db.Close()
	if out, err := runCmd(t, "keys", "revoke", "offline", "--config", cfg); err != nil || !strings.Contains(out, "offline") {
		t.Errorf("keys revoke = %q, %v", out, err)
	}
	if out, err := runCmd(t, "keys", "list", "--config", cfg); err != nil || strings.Contains(out, "offline") {
		t.Errorf("keys list after revoke = %q, %v; want no offline key", out, err)
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

// TestChildServer is not a test on its own: TestKillNine runs the test
// binary again with BURNER_CHILD_DATA set, and this becomes the server.
func TestChildServer(t *testing.T) {
	data := os.Getenv("BURNER_CHILD_DATA")
	if data == "" {
		t.Skip("runs only as TestKillNine's child process")
	}
	cfg := defaultConfig()
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
			db, err := storage.Open(data, storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, key, err := db.CreateKey(context.Background(), "test")
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

func TestJSONLogs(t *testing.T) {
	var buf bytes.Buffer
	newLogger(LogConfig{Format: "json", Level: "warn"}, &buf).Info("hidden")
	newLogger(LogConfig{Format: "json", Level: "warn"}, &buf).Warn("shown", "email_id", "x")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["msg"] != "shown" || line["email_id"] != "x" {
		t.Errorf("JSON log output %q (%v); want one JSON line for the warning only", buf.String(), err)
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
	db, err := storage.Open(ta.data, storage.Options{})
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
		"go_goroutines ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
