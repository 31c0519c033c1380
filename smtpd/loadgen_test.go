package smtpd

// The ingest load generator: realistic messages, parallel SMTP clients over
// real TCP, and a server that discards everything to measure the protocol's
// ceiling in the same run. docs/performance.md says how to run it.

import (
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"burner/internal/benchdata"
	"burner/storage"
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

// loadResult is what a load run measured.
type loadResult struct {
	sent    int
	elapsed time.Duration
	latency []time.Duration // from the end of DATA to the 250, one per message
}

func (r loadResult) report(b *testing.B) {
	b.ReportMetric(float64(r.sent)/r.elapsed.Seconds(), "msgs/s")
	slices.Sort(r.latency)
	b.ReportMetric(benchdata.Percentile(r.latency, 50).Seconds()*1000, "p50-ms")
	b.ReportMetric(benchdata.Percentile(r.latency, 99).Seconds()*1000, "p99-ms")
}

// sendLoad sends n messages, taken in turn from mails, over conns parallel
// connections to addr, and times each from its end of DATA to the reply.
func sendLoad(tb testing.TB, addr string, conns, n int, mails []benchMail) loadResult {
	tb.Helper()
	var (
		next      atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, n)
	)
	clients := make([]*smtp.Client, conns)
	for i := range clients {
		c, err := smtp.Dial(addr)
		if err != nil {
			tb.Fatalf("smtp.Dial(%s): %v", addr, err)
		}
		if err := c.Hello("loadgen.test"); err != nil {
			tb.Fatalf("EHLO: %v", err)
		}
		clients[i] = c
	}
	start := time.Now()
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					break
				}
				m := mails[i%len(mails)]
				d, err := sendOne(c, m)
				if err != nil {
					tb.Errorf("message %d to %s: %v", i, m.to, err)
					break
				}
				mine = append(mine, d)
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, c := range clients {
		c.Quit()
	}
	return loadResult{sent: n, elapsed: elapsed, latency: latencies}
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
// connections to the real daemon and, for the ratio, to a server that
// discards them. It reports msgs/s and the time from the end of DATA to the
// reply (p50, p99). "inboxes=1" delivers into one inbox that holds 10,000
// emails before the run starts (but in a smoke run: benchdata.SmokeRun).
func BenchmarkIngest(b *testing.B) {
	mails := benchMails(1000, 100)
	b.Run("discard", func(b *testing.B) {
		addr := startDiscard(b)
		sendLoad(b, addr, loadConns, loadConns, mails) // connections warm, as below
		b.ResetTimer()
		sendLoad(b, addr, loadConns, b.N, mails).report(b)
	})
	b.Run("inboxes=100", func(b *testing.B) {
		addr := startDaemon(b, openDB(b), Options{})
		b.ResetTimer()
		sendLoad(b, addr, loadConns, b.N, mails).report(b)
	})
	b.Run("inboxes=1", func(b *testing.B) {
		one := benchMails(1000, 1)
		var db *storage.DB
		if benchdata.SmokeRun() {
			db = openDB(b) // skip the fill
		} else {
			db = benchdata.OpenCopy(b, bigInbox(b))
		}
		addr := startDaemon(b, db, Options{})
		b.ResetTimer()
		sendLoad(b, addr, loadConns, b.N, one).report(b)
	})
}

// bigInbox returns a data file whose inbox bench0 holds 10,000 realistic
// emails, parsed as the daemon parses them (open a copy: it is shared).
func bigInbox(b *testing.B) string {
	return benchdata.File(b, "smtpd-one-inbox-10000", func(path string) error {
		p := newParser()
		mails := benchMails(10_000, 1)
		msgs, to := make([]*storage.Message, len(mails)), make([]string, len(mails))
		for i, m := range mails {
			msg, _ := p.parse(m.data, "loadgen@sender.test")
			msgs[i], to[i] = &msg, m.to
		}
		return benchdata.Fill(b, path, msgs, to)
	})
}
