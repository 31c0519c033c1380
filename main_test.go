package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

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

// stopNow stops burner in the middle of a test; the cleanup's stop then
// finds it stopped.
func (ta *testApp) stopNow() {
	ta.stop()
	ta.done <- nil
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

// listIDs returns the ids of the emails of inbox, newest first, through
// the API.
func (ta *testApp) listIDs(t *testing.T, key, inbox string) []string {
	t.Helper()
	status, body := ta.get(t, key, "/api/v1/emails?to="+inbox)
	var es []struct{ ID, Subject string }
	if status != 200 || json.Unmarshal(body, &es) != nil {
		t.Fatalf("GET %s's inbox = %d %s", inbox, status, body)
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID + " " + e.Subject
	}
	return ids
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

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_burner", "zsh": "#compdef burner", "fish": "complete -c burner"} {
		out, err := runCmd(t, "completion", shell)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("burner completion %s: %v, output lacks %q", shell, err, want)
		}
	}
}

// TestHelp: every flag of every command says what it does, and --help
// shows the defaults.
func TestHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" {
			t.Errorf("%q has no short description", c.CommandPath())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if len(f.Usage) < 15 {
				t.Errorf("%s --%s: usage %q says too little", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())

	out, err := runCmd(t, "serve", "--help")
	for _, want := range []string{
		`--data FILE`, `(default "burner.db")`, `--http ADDR`, `(default "127.0.0.1:8080")`,
		`--smtp ADDR`, `(default "127.0.0.1:2525")`, `--domain DOMAIN`, `--config FILE`, "SIGHUP",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("burner serve --help lacks %q:\n%s", want, out)
		}
	}
	out, _ = runCmd(t, "--help")
	for _, cmd := range []string{"serve", "keys", "backup", "check", "stats", "inboxes", "completion", "version", "health"} {
		if !regexp.MustCompile(`(?m)^  ` + cmd + ` `).MatchString(out) {
			t.Errorf("burner --help does not list %s:\n%s", cmd, out)
		}
	}
}
