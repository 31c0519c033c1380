package smtpd

// The ingest load generator: realistic messages, parallel SMTP clients over
// real TCP, and a server that discards everything to measure the protocol's
// ceiling in the same run. docs/performance.md says how to run it.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"burner/internal/benchdata"
	"burner/internal/pgtest"
	"burner/message"
	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/postgres"
)

// benchMail is one message of a load: its envelope and its data.
type benchMail struct {
	to   string
	data []byte
}

// benchMails returns n realistic messages spread over inboxes inboxes
// (bench0@inbox.test, bench1@…).
func benchMails(n, inboxes int) []benchMail {
	out := make([]benchMail, n)
	for i, nl := range benchdata.Batch(n, inboxes) {
		out[i] = benchMail{to: nl.To, data: nl.Data()}
	}
	return out
}

// sendLoad sends n messages, taken in turn from mails, over conns parallel
// connections to addr (a comma-separated list of servers gets the
// connections in turn), and times each from its end of DATA to the reply.
// It returns the time the load took and those times, sorted.
func sendLoad(tb testing.TB, addr string, conns, n int, mails []benchMail) (time.Duration, []time.Duration) {
	tb.Helper()
	addrs := strings.Split(addr, ",")
	clients := make([]*smtp.Client, conns)
	for i := range clients {
		c, err := smtp.Dial(addrs[i%len(addrs)])
		if err != nil {
			tb.Fatalf("smtp.Dial(%s): %v", addrs[i%len(addrs)], err)
		}
		if err := c.Hello("loadgen.test"); err != nil {
			tb.Fatalf("EHLO: %v", err)
		}
		clients[i] = c
	}
	elapsed, latencies := benchdata.Load(tb, conns, n, func(w, i int) (time.Duration, error) {
		m := mails[i%len(mails)]
		d, err := sendOne(clients[w], m)
		if err != nil {
			return 0, fmt.Errorf("message to %s: %w", m.to, err)
		}
		return d, nil
	})
	for _, c := range clients {
		c.Quit()
	}
	return elapsed, latencies
}

// sendOne sends one message and returns the time from its end of data to
// the server's reply.
func sendOne(c *smtp.Client, m benchMail) (time.Duration, error) {
	if err := c.Mail("loadgen@sender.test", nil); err != nil {
		return 0, err
	}
	if err := c.Rcpt(m.to, nil); err != nil {
		return 0, err
	}
	w, err := c.Data()
	if err != nil {
		return 0, err
	}
	if _, err := w.Write(m.data); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := w.Close(); err != nil { // writes the final dot, reads the reply
		return 0, err
	}
	return time.Since(start), nil
}

// discardBackend is an SMTP server that takes every message and throws it
// away: what the load generator gets from it is the protocol's ceiling on
// this machine.
type discardBackend struct{}

func (discardBackend) NewSession(*smtp.Conn) (smtp.Session, error) { return discardSession{}, nil }

type discardSession struct{}

func (discardSession) Mail(string, *smtp.MailOptions) error { return nil }
func (discardSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (discardSession) Data(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
func (discardSession) Reset()        {}
func (discardSession) Logout() error { return nil }

// startDiscard runs a discarding server with the limits burner's daemon
// sets, and returns its address.
func startDiscard(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := smtp.NewServer(discardBackend{})
	srv.Domain = "localhost"
	srv.MaxMessageBytes = 10 << 20
	srv.MaxRecipients = 100
	srv.ReadTimeout = 5 * time.Minute
	srv.WriteTimeout = time.Minute
	srv.MaxLineLength = 2000
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// loadConns is the number of parallel SMTP connections of the ingest
// benchmarks.
const loadConns = 8

// BenchmarkIngest sends realistic 4 KB messages over 8 parallel
// connections to the real daemon, with its session log as serve has it
// (each message's session record in its commit), and, for the ratio, to
// a server that discards them. It reports msgs/s, the time from the end of DATA to the
// reply (p50, p99) and cpu-µs/msg, the CPU time of this process (the
// server's: the generator is another) per message sent.
//
// "inboxes=100" runs once per engine, each on a fresh store: a bbolt file
// and, when BURNER_TEST_POSTGRES names a server, a new PostgreSQL database
// in it (otherwise that one skips, saying why). The PostgreSQL figure
// includes the database's own CPU only when it runs elsewhere: on one
// machine it competes with the daemon for the same cores, as in the
// figures of docs/scale.md. "inboxes=1" delivers into one bbolt inbox
// that holds 10,000 emails before the run starts (but in a smoke run:
// benchdata.SmokeRun).
//
// The load generator runs as a process of its own (this test binary again,
// as TestLoadGenerator), as an outside sender would: sharing the servers'
// Go runtime, it waited for their goroutines and garbage collections, which
// put milliseconds into the tail it measured (the discard server's p99 was
// 3.7 ms in process, under 1.2 ms out of it) and slowed the discard server
// more than the daemon. A CPU profile of this benchmark is the servers' alone.
func BenchmarkIngest(b *testing.B) {
	b.Run("discard", func(b *testing.B) {
		runLoad(b, startDiscard(b), 100)
	})
	b.Run("inboxes=100", func(b *testing.B) {
		b.Run("engine=bbolt", func(b *testing.B) {
			db := openDB(b)
			runLoad(b, startDaemon(b, db, Options{SessionLog: benchLog(b, db)}), 100)
		})
		// Each message verified after its 250 (spec §12), its verdict
		// stored: the verifier's CPU is the server's too.
		b.Run("engine=bbolt/verify", func(b *testing.B) {
			db := openDB(b)
			runLoad(b, startDaemon(b, db, Options{Auth: benchVerifier(b, db)}), 100)
		})
		b.Run("engine=postgres", func(b *testing.B) {
			runLoad(b, serveStore(b, openPostgres(b, newDatabase(b))), 100)
		})
		// Two nodes on one database, the generator's connections split
		// between them, as senders split over two MX records of equal
		// preference.
		b.Run("nodes=2", func(b *testing.B) {
			dbURL := newDatabase(b)
			a, other := serveStore(b, openPostgres(b, dbURL)), serveStore(b, openPostgres(b, dbURL))
			runLoad(b, a+","+other, 100)
		})
	})
	b.Run("inboxes=1", func(b *testing.B) {
		var db *boltdb.DB
		if benchdata.SmokeRun() {
			db = openDB(b) // skip the fill
		} else {
			db = benchdata.OpenCopy(b, bigInbox(b))
		}
		runLoad(b, startDaemon(b, db, Options{SessionLog: benchLog(b, db)}), 1)
	})
}

// benchLog is the session log of a daemon under load, as serve gives it
// one: every delivered message writes its session's record in its commit
// (spec §13.1).
func benchLog(b *testing.B, db storage.Engine) SessionLog {
	w := NewSessionWriter(db, nil)
	b.Cleanup(func() { w.Shutdown(context.Background()) })
	return w
}

// serveStore runs the real daemon on db, whatever its engine, on a
// loopback port, and returns its address; startDaemon does the same for a
// bbolt file with the test's log.
func serveStore(b *testing.B, db storage.Engine) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := New(db, Options{SessionLog: benchLog(b, db)}, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-done; err != nil {
			b.Errorf("Serve returned %v", err)
		}
	})
	return ln.Addr().String()
}

// newDatabase returns the URL of a new, empty database (pgtest.Database):
// without BURNER_TEST_POSTGRES the PostgreSQL benchmarks skip, saying why,
// and under CI=true they fail.
func newDatabase(b *testing.B) string {
	b.Helper()
	return pgtest.Database(b)
}

// openPostgres opens burner's store in the database at dbURL, closed when
// b ends.
func openPostgres(b *testing.B, dbURL string) *postgres.DB {
	b.Helper()
	return pgtest.Open(b, dbURL, postgres.Options{})
}

// runLoad sends b.N messages spread over inboxes inboxes to addr from a
// load generator process, and reports what it measured.
func runLoad(b *testing.B, addr string, inboxes int) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadGenerator$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BURNER_LOAD="+fmt.Sprintf("%s %d %d", addr, b.N, inboxes))
	b.ResetTimer()
	cpu := benchdata.CPUTime()
	out, err := cmd.CombinedOutput()
	cpu = benchdata.CPUTime() - cpu
	b.StopTimer()
	if err != nil {
		b.Fatalf("load generator: %v\n%s", err, out)
	}
	var sent int
	var elapsed, p50, p99 time.Duration
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(line, "LOAD %d %d %d %d", &sent, &elapsed, &p50, &p99); err == nil {
			break
		}
	}
	if sent != b.N {
		b.Fatalf("load generator sent %d of %d messages:\n%s", sent, b.N, out)
	}
	b.ReportMetric(float64(sent)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(p50.Seconds()*1000, "p50-ms")
	b.ReportMetric(p99.Seconds()*1000, "p99-ms")
	// The generator is a process of its own, so this process's CPU is the
	// server's (and the runtime's under it): what a message costs a host.
	b.ReportMetric(float64(cpu)/1e3/float64(sent), "cpu-µs/msg")
}

// TestLoadGenerator is BenchmarkIngest's load generator, run by it as a
// separate process with BURNER_LOAD="addr messages inboxes". It first
// sends one message per connection, untimed, to warm both ends, then the
// load over fresh connections, and prints "LOAD sent elapsed p50 p99"
// (durations in nanoseconds).
func TestLoadGenerator(t *testing.T) {
	spec := os.Getenv("BURNER_LOAD")
	if spec == "" {
		t.Skip("runs only as BenchmarkIngest's load generator process")
	}
	var addr string
	var n, inboxes int
	if _, err := fmt.Sscanf(spec, "%s %d %d", &addr, &n, &inboxes); err != nil {
		t.Fatalf("BURNER_LOAD=%q: %v", spec, err)
	}
	mails := benchMails(1000, inboxes)
	sendLoad(t, addr, loadConns, loadConns, mails)
	elapsed, latencies := sendLoad(t, addr, loadConns, n, mails)
	fmt.Printf("LOAD %d %d %d %d\n", len(latencies), elapsed, benchdata.Percentile(latencies, 50), benchdata.Percentile(latencies, 99))
}

// bigInbox returns a data file whose inbox bench0 holds 10,000 realistic
// emails, parsed as the daemon parses them (open a copy: it is shared).
func bigInbox(b *testing.B) string {
	return benchdata.File(b, "smtpd-one-inbox-10000", func(path string) error {
		p := message.New(0)
		mails := benchMails(10_000, 1)
		msgs, to := make([]*storage.Message, len(mails)), make([]string, len(mails))
		for i, m := range mails {
			msg, _ := p.Parse(m.data, "loadgen@sender.test")
			msgs[i], to[i] = &msg, m.to
		}
		return benchdata.Fill(b, path, msgs, to)
	})
}
