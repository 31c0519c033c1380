package smtpd

// The ingest load generator: realistic messages, parallel SMTP clients over
// real TCP, and a server that discards everything to measure the protocol's
// ceiling in the same run. docs/performance.md says how to run it.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/quotedprintable"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"burner/storage"
)

// mailGen makes realistic mail: multipart/alternative messages of about
// 4 KB whose HTML part is a table-based newsletter layout and whose plain
// part is the text of that HTML, in natural-ish words from a vocabulary of
// a few hundred (../testdata/words.txt), drawn with a Zipf distribution as
// the words of real text are.
type mailGen struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []string
}

func newMailGen(tb testing.TB, seed uint64) *mailGen {
	tb.Helper()
	words := strings.Fields(string(mustRead(tb, "../testdata/words.txt")))
	rng := rand.New(rand.NewPCG(seed, 42))
	return &mailGen{rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1)), words: words}
}

func (g *mailGen) word() string { return g.words[g.zipf.Uint64()] }

// sentence returns min to max words, capitalized, ending in a full stop.
func (g *mailGen) sentence(min, max int) string {
	n := min + g.rng.IntN(max-min+1)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.word()
	}
	ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
	return strings.Join(ws, " ") + "."
}

func (g *mailGen) paragraph() string {
	ss := make([]string, 2+g.rng.IntN(3))
	for i := range ss {
		ss[i] = g.sentence(8, 18)
	}
	return strings.Join(ss, " ")
}

// message returns a message to the address to, with CRLF line endings, of
// about 4 KB.
func (g *mailGen) message(to string) []byte {
	site := fmt.Sprintf("shop%d.example.com", g.rng.IntN(50))
	subject := strings.TrimSuffix(g.sentence(4, 9), ".")
	headline := strings.TrimSuffix(g.sentence(3, 7), ".")
	paras := make([]string, 4+g.rng.IntN(3))
	for i := range paras {
		paras[i] = g.paragraph()
	}
	link := fmt.Sprintf("https://%s/%s/%x", site, g.word(), g.rng.Uint64())
	linkText := strings.TrimSuffix(g.sentence(2, 4), ".")
	footer := g.sentence(8, 14)
	unsubscribe := fmt.Sprintf("https://%s/unsubscribe/%x", site, g.rng.Uint64())
	boundary := fmt.Sprintf("=_b_%x", g.rng.Uint64())

	var m bytes.Buffer
	fmt.Fprintf(&m, "From: \"%s Team\" <news@%s>\r\n", strings.ToUpper(site[:1])+site[1:5], site)
	fmt.Fprintf(&m, "To: <%s>\r\n", to)
	fmt.Fprintf(&m, "Subject: %s\r\n", subject)
	fmt.Fprintf(&m, "Date: %s\r\n", time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC).Format(time.RFC1123Z))
	fmt.Fprintf(&m, "Message-ID: <%x.%x@%s>\r\n", g.rng.Uint64(), g.rng.Uint32(), site)
	fmt.Fprintf(&m, "List-Unsubscribe: <%s>\r\n", unsubscribe)
	m.WriteString("MIME-Version: 1.0\r\n")
	fmt.Fprintf(&m, "Content-Type: multipart/alternative; boundary=\"%s\"\r\n\r\n", boundary)

	// The plain part: the text of the HTML, wrapped at 72 columns.
	fmt.Fprintf(&m, "--%s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n", boundary)
	plain := []string{headline, "", "Hi " + g.word() + ","}
	for _, p := range paras {
		plain = append(plain, "", wrap(p, 72))
	}
	plain = append(plain, "", linkText+": "+link, "", footer, "Unsubscribe: "+unsubscribe)
	m.WriteString(strings.ReplaceAll(strings.Join(plain, "\n"), "\n", "\r\n"))
	m.WriteString("\r\n\r\n")

	// The HTML part, quoted-printable as most bulk mail is.
	var h strings.Builder
	h.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>` + subject + `</title>`)
	h.WriteString(`<style>body { margin: 0; } a { color: #0a58ca; }</style></head>` + "\n")
	h.WriteString(`<body style="margin: 0; padding: 0">` + "\n")
	h.WriteString(`<table width="100%" cellpadding="0" cellspacing="0" border="0" bgcolor="#f4f4f4"><tr><td align="center">` + "\n")
	h.WriteString(`<table width="600" cellpadding="0" cellspacing="0" border="0" bgcolor="#ffffff"><tr>` +
		`<td style="padding: 24px; font-family: Arial, sans-serif; font-size: 14px; line-height: 20px; color: #333333">` + "\n")
	fmt.Fprintf(&h, `<h1 style="color: #0a58ca; font-size: 22px; margin: 0 0 16px 0">%s</h1>`+"\n", headline)
	fmt.Fprintf(&h, "<p>Hi %s,</p>\n", plain[2][3:len(plain[2])-1])
	for _, p := range paras {
		fmt.Fprintf(&h, "<p style=\"margin: 0 0 12px 0\">%s</p>\n", p)
	}
	fmt.Fprintf(&h, `<p><a href="%s" style="color: #ffffff; background-color: #0a58ca; padding: 8px 16px; text-decoration: none">%s</a></p>`+"\n", link, linkText)
	h.WriteString("</td></tr></table>\n")
	fmt.Fprintf(&h, `<p style="font-size: 11px; color: #999999">%s <a href="%s">Unsubscribe</a></p>`+"\n", footer, unsubscribe)
	h.WriteString("</td></tr></table>\n</body></html>\n")
	fmt.Fprintf(&m, "--%s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", boundary)
	var qp bytes.Buffer
	w := quotedprintable.NewWriter(&qp)
	w.Write([]byte(strings.ReplaceAll(h.String(), "\n", "\r\n")))
	w.Close()
	m.Write(qp.Bytes())
	fmt.Fprintf(&m, "\r\n--%s--\r\n", boundary)
	return m.Bytes()
}

// wrap breaks s into lines of at most width bytes at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// benchMail is one message of a load: its envelope and its data.
type benchMail struct {
	to   string
	data []byte
}

// benchMails returns n realistic messages spread over inboxes inboxes
// (bench0@inbox.test, bench1@…).
func benchMails(tb testing.TB, n, inboxes int) []benchMail {
	g := newMailGen(tb, 1)
	out := make([]benchMail, n)
	for i := range out {
		to := fmt.Sprintf("bench%d@inbox.test", i%inboxes)
		out[i] = benchMail{to: to, data: g.message(to)}
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
	b.ReportMetric(percentile(r.latency, 50).Seconds()*1000, "p50-ms")
	b.ReportMetric(percentile(r.latency, 99).Seconds()*1000, "p99-ms")
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
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
// emails before the run starts (but for smokeRun).
func BenchmarkIngest(b *testing.B) {
	mails := benchMails(b, 1000, 100)
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
		one := benchMails(b, 1000, 1)
		var db *storage.DB
		if smokeRun() {
			db = openDB(b) // skip the fill
		} else {
			db = openCopy(b, bigInbox(b))
		}
		addr := startDaemon(b, db, Options{})
		b.ResetTimer()
		sendLoad(b, addr, loadConns, b.N, one).report(b)
	})
}

// smokeRun reports whether benchmarks run once each (-benchtime=1x, as CI
// runs them), to check that they work rather than to measure: then they
// skip building the big files.
func smokeRun() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && f.Value.String() == "1x"
}

// benchFilesVersion names the cached benchmark files; change it when the
// messages or the storage layout change.
const benchFilesVersion = "v5"

var bigInboxOnce struct {
	sync.Once
	path string
	err  error
}

// bigInbox returns a data file whose inbox bench0 holds 10,000 realistic
// emails, built once per machine under the temporary directory (it is not
// modified: open a copy).
func bigInbox(b *testing.B) string {
	b.Helper()
	o := &bigInboxOnce
	o.Do(func() {
		o.path = filepath.Join(os.TempDir(), "burner-bench-"+benchFilesVersion, "smtpd-one-inbox-10000.db")
		if _, err := os.Stat(o.path); err == nil {
			return
		}
		o.err = buildFile(b, o.path, benchMails(b, 10_000, 1))
	})
	if o.err != nil {
		b.Fatal(o.err)
	}
	return o.path
}

// buildFile delivers mails, parsed as the daemon parses them, into a new
// data file at path from 8 writers.
func buildFile(b *testing.B, path string, mails []benchMail) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	db, err := storage.Open(tmp, storage.Options{})
	if err != nil {
		return err
	}
	p := newParser()
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		first error
		mu    sync.Mutex
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(mails) {
					return
				}
				msg, _ := p.parse(mails[i].data, "loadgen@sender.test")
				if _, err := db.Deliver(context.Background(), &msg, []string{mails[i].to}); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := db.Close(); err != nil && first == nil {
		first = err
	}
	if first != nil {
		return first
	}
	return os.Rename(tmp, path)
}

// openCopy opens a copy of the data file at path, closed when b ends.
func openCopy(b *testing.B, path string) *storage.DB {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(b.TempDir(), "burner.db")
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		b.Fatal(err)
	}
	db, err := storage.Open(dst, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
