package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/jackc/pgx/v5"
)

// The helpers of e2e_nodes_test.go: burner serve as a process of its own,
// a PostgreSQL cluster a test may stop, and a stream of mail.

// nodeProc is one `burner serve` process: the test binary run again as
// burner's CLI (TestCLIChild), on loopback ports chosen by the kernel.
type nodeProc struct {
	name       string
	cmd        *exec.Cmd
	smtp, http string // host:port; and http://host:port
	key        string // the first API key, when this node created it

	ready  chan [2]string // the SMTP and HTTP addresses, once it serves
	exited chan struct{}  // closed once the process has ended

	mu     sync.Mutex
	stderr strings.Builder
}

// spawnNode starts `burner serve --data dbURL` with an empty config file
// (so that no ./burner.toml changes the test); see spawnNodeWith.
func spawnNode(t *testing.T, name, dbURL string) *nodeProc {
	t.Helper()
	return spawnNodeWith(t, name, dbURL, "")
}

// spawnNodeWith starts `burner serve --data dbURL` with config as its
// config file, and returns at once; wait for it with waitReady. The test
// stops it when it ends: SIGTERM, then SIGKILL if it has not stopped
// within 15 s.
func spawnNodeWith(t *testing.T, name, dbURL, config string) *nodeProc {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "burner.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return spawnServe(t, name, nil, "serve", "--config", cfg, "--data", dbURL,
		"--http", "127.0.0.1:0", "--smtp", "127.0.0.1:0", "--domain", "inbox.test")
}

// spawnServe runs `burner args...` (a serve) as a process of its own, with
// env added to the test's environment, and returns at once; see
// spawnNodeWith.
func spawnServe(t *testing.T, name string, env []string, args ...string) *nodeProc {
	t.Helper()
	argv, _ := json.Marshal(append([]string{"burner"}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIChild$", "-test.count=1")
	for _, kv := range os.Environ() {
		// A BURNER_KEY of the shell running the tests (for the clients)
		// would change which key serve makes: a test gives its own.
		if !strings.HasPrefix(kv, "NOTIFY_SOCKET=") && !strings.HasPrefix(kv, envKeyVar+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, env...), "BURNER_CLI_ARGS="+string(argv))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node %s: %v", name, err)
	}
	n := &nodeProc{name: name, cmd: cmd, ready: make(chan [2]string, 1), exited: make(chan struct{})}
	go func() {
		defer close(n.exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			n.mu.Lock()
			n.stderr.WriteString(line + "\n")
			if k := keyRE.FindString(line); k != "" {
				n.key = k
			}
			n.mu.Unlock()
			if strings.Contains(line, `msg="burner started"`) {
				n.ready <- [2]string{logAttr(line, "smtp"), logAttr(line, "http")}
			}
			var j struct{ Msg, SMTP, HTTP string } // log.format = "json"
			if json.Unmarshal([]byte(line), &j) == nil && j.Msg == "burner started" {
				n.ready <- [2]string{j.SMTP, j.HTTP}
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
	}()
	t.Cleanup(func() {
		if !n.stop() {
			t.Errorf("node %s did not stop within 15 s of SIGTERM: killed", n.name)
		}
		if t.Failed() {
			t.Logf("stderr of node %s:\n%s", n.name, n.output())
		}
	})
	return n
}

// logAttr returns the value of the attribute key of a text log line.
func logAttr(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// waitReady waits until the node serves, and fails the test if it ends
// first or takes over 30 s.
func (n *nodeProc) waitReady(t *testing.T) {
	t.Helper()
	select {
	case addrs := <-n.ready:
		n.smtp, n.http = addrs[0], "http://"+addrs[1]
		n.mu.Lock()
		defer n.mu.Unlock()
		// The key is printed before the log line that says it serves.
		if !strings.HasPrefix(n.smtp, "127.0.0.1:") || !strings.HasPrefix(n.http, "http://127.0.0.1:") {
			t.Fatalf("node %s started on %q and %q, want loopback addresses", n.name, n.smtp, n.http)
		}
	case <-n.exited:
		t.Fatalf("node %s ended before it served:\n%s", n.name, n.output())
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s does not serve after 30 s:\n%s", n.name, n.output())
	}
}

func (n *nodeProc) firstKey() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.key
}

func (n *nodeProc) output() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stderr.String()
}

// stop ends the node as systemd would: SIGTERM, then SIGKILL after 15 s.
// It reports whether the node ended (or had ended) without the SIGKILL.
func (n *nodeProc) stop() bool {
	select {
	case <-n.exited:
		return true
	default:
	}
	// A connection the client dialled but never sent a request on counts
	// as busy for 5 s in http.Server.Shutdown: close them first.
	http.DefaultClient.CloseIdleConnections()
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
		return true
	case <-time.After(15 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
		return false
	}
}

// apiGet asks base+path with key and returns the status, the headers and
// the body.
func apiGet(t *testing.T, base, key, path string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", base+path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", base+path, err)
	}
	return res.StatusCode, res.Header, body
}

// checkListed asks the node at base, through the API, for each inbox of
// acked (each message of a stream has an inbox of its own, named as its
// subject), and reports those that do not list exactly their message.
func checkListed(t *testing.T, base, key string, acked []string) {
	t.Helper()
	var (
		mu      sync.Mutex
		missing []string
		wg      sync.WaitGroup
	)
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for inbox := range work {
				req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/emails?to="+url.QueryEscape(inbox), nil)
				req.Header.Set("Authorization", "Bearer "+key)
				var got []struct{ Subject string }
				res, err := http.DefaultClient.Do(req)
				if err == nil {
					if res.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", res.StatusCode)
					} else {
						err = json.NewDecoder(res.Body).Decode(&got)
					}
					res.Body.Close()
				}
				if err != nil || len(got) != 1 || got[0].Subject != inbox {
					mu.Lock()
					missing = append(missing, fmt.Sprintf("%s (listed %v, %v)", inbox, got, err))
					mu.Unlock()
				}
			}
		})
	}
	for _, inbox := range acked {
		work <- inbox
	}
	close(work)
	wg.Wait()
	if len(missing) > 0 {
		t.Errorf("%d of %d messages got a 250 but are not listed, e.g. %v", len(missing), len(acked), missing[:min(len(missing), 5)])
	}
}

// ack is a message that got a 250: its inbox (also its subject), when the
// end of its DATA was sent, and when the 250 came.
type ack struct {
	inbox       string
	sent, acked time.Time
}

// mailStream sends mail over several SMTP connections at once, each
// message to an inbox of its own, until stopped; a connection that fails
// is dialled again.
type mailStream struct {
	addr  string
	onAck func(n int) // called after each 250 with the count so far; may be nil

	mu      sync.Mutex
	acks    []ack
	replies map[string]int // refusals by code ("451 4.3.0"), and "other" for a lost connection
	done    chan struct{}
	wg      sync.WaitGroup
}

func startStream(addr string, conns int, onAck func(n int)) *mailStream {
	s := &mailStream{addr: addr, onAck: onAck, replies: map[string]int{}, done: make(chan struct{})}
	for w := range conns {
		s.wg.Go(func() { s.send(w) })
	}
	return s
}

func (s *mailStream) send(w int) {
	var c *smtp.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for i := range 20_000 { // bounded; stop ends it far sooner
		select {
		case <-s.done:
			return
		default:
		}
		if c == nil {
			var err error
			if c, err = smtp.Dial(s.addr); err != nil {
				s.refused("dial")
				c = nil
				time.Sleep(5 * time.Millisecond) // pacing: the node is away
				continue
			}
			c.CommandTimeout, c.SubmissionTimeout = 10*time.Second, 10*time.Second
		}
		inbox := fmt.Sprintf("s%d-m%d", w, i)
		sent, err := sendOne(c, inbox)
		if err != nil {
			var se *smtp.SMTPError
			if errors.As(err, &se) {
				s.refused(fmt.Sprintf("%d %d.%d.%d", se.Code, se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2]))
			} else {
				s.refused("other")
			}
			c.Close()
			c = nil
			time.Sleep(5 * time.Millisecond) // pacing: the store is away
			continue
		}
		s.mu.Lock()
		s.acks = append(s.acks, ack{inbox: inbox, sent: sent, acked: time.Now()})
		n := len(s.acks)
		s.mu.Unlock()
		if s.onAck != nil {
			s.onAck(n)
		}
	}
}

// sendOne sends one message to inbox@inbox.test with subject inbox, and
// returns when the end of its DATA went out.
func sendOne(c *smtp.Client, inbox string) (time.Time, error) {
	if err := c.Mail("stream@sender.test", nil); err != nil {
		return time.Time{}, err
	}
	if err := c.Rcpt(inbox+"@inbox.test", nil); err != nil {
		return time.Time{}, err
	}
	w, err := c.Data()
	if err != nil {
		return time.Time{}, err
	}
	if _, err := io.WriteString(w, "From: stream@sender.test\r\nSubject: "+inbox+"\r\n\r\nbody of "+inbox+"\r\n"); err != nil {
		return time.Time{}, err
	}
	sent := time.Now()
	return sent, w.Close()
}

func (s *mailStream) refused(reason string) {
	s.mu.Lock()
	s.replies[reason]++
	s.mu.Unlock()
}

// count returns how many messages got a 250 so far.
func (s *mailStream) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acks)
}

// replyCount returns how often the stream got reply so far.
func (s *mailStream) replyCount(reply string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replies[reply]
}

// stop ends the stream and returns what got a 250, and the refusals.
func (s *mailStream) stop() ([]ack, map[string]int) {
	close(s.done)
	s.wg.Wait()
	return s.acks, s.replies
}

// waitFor polls cond every few milliseconds until it holds, and fails the
// test with what when it does not within d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pgCluster is a PostgreSQL 15 cluster of the test's own, in a temporary
// directory and reached through a unix socket there only, that the test
// may stop and start.
type pgCluster struct {
	dir      string // holds data/, the socket and the server's log
	postgres bool   // run the server's programs as the user postgres (the test runs as root)
}

// pgBin holds initdb and pg_ctl of Debian's PostgreSQL 15.
const pgBin = "/usr/lib/postgresql/15/bin"

// newCluster makes and starts a cluster, stopped when the test ends.
// Without PostgreSQL's programs the test skips, but under CI=true it
// fails: .ci/run installs them.
func newCluster(t *testing.T) *pgCluster {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s/initdb is missing, and CI=true needs this test to run (.ci/run installs postgresql): %v", pgBin, err)
		}
		t.Skipf("%s/initdb is missing: no PostgreSQL of our own to stop and start", pgBin)
	}
	c := &pgCluster{dir: t.TempDir(), postgres: os.Geteuid() == 0}
	if c.postgres {
		// initdb refuses to run as root: the cluster belongs to postgres,
		// who must be able to reach its directory.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the cluster needs the user postgres: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(c.dir), 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := c.run("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	conf, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(conf, "listen_addresses = ''\nunix_socket_directories = '%s'\n", c.dir)
	if cerr := conf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	c.start(t)
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
			out, err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
			// A postmaster killed by the test leaves its pid file behind:
			// stop fails then, and status says that none runs.
			if _, running := c.run("pg_ctl", "-D", c.data(), "status"); err != nil && running == nil {
				t.Errorf("stop the test's PostgreSQL: %v\n%s", err, out)
			}
		}
	})
	return c
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

// run runs one of PostgreSQL's programs, as postgres when the test runs
// as root, and returns its output.
func (c *pgCluster) run(prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append([]string{filepath.Join(pgBin, prog)}, args...)
	if c.postgres {
		argv = append([]string{"runuser", "-u", "postgres", "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// start starts the server and returns once it accepts connections. After
// a kill -9 of the postmaster, its orphaned children hold the shared
// memory until they notice and exit, and PostgreSQL refuses to start
// until then: so start tries again for up to 20 s.
func (c *pgCluster) start(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-w", "-t", "20", "start")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
			t.Fatalf("pg_ctl start: %v\n%s\nserver log:\n%s", err, out, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopFast stops the server as `pg_ctl -m fast stop` does: it ends every
// session, rolling back what has not committed, and returns once it has
// stopped.
func (c *pgCluster) stopFast(t *testing.T) {
	t.Helper()
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop"); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// killPostmaster sends SIGKILL to the postmaster, as a crash would, and
// returns once it is gone; its children end on their own when they
// notice, and the next start recovers from the WAL.
func (c *pgCluster) killPostmaster(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("postmaster.pid: %q", first)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	// The postmaster is not our child, so it cannot be waited for.
	// A zombie counts as gone: nobody may reap it in a container.
	waitFor(t, 10*time.Second, "the postmaster ends after kill -9", func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		_, rest, _ := strings.Cut(string(stat), ") ")
		return strings.HasPrefix(rest, "Z")
	})
}

// url returns the URL of the database name in the cluster.
func (c *pgCluster) url(name string) string {
	return "postgres:///" + name + "?host=" + url.QueryEscape(c.dir) + "&user=postgres"
}

// createDatabase makes a new database in the cluster and returns its URL.
func (c *pgCluster) createDatabase(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return c.url(name)
}
