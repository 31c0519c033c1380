// Package benchdata is what the benchmarks of storage, smtpd and server
// share: realistic mail, the delivery of it from parallel writers, and
// data files built once per machine. Only tests import it.
package benchdata

import (
	"bytes"
	"context"
	_ "embed"
	"flag"
	"fmt"
	"math/rand/v2"
	"mime/quotedprintable"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/boltdb"
)

// words is the vocabulary of the messages: a few hundred words of
// newsletter prose, drawn with a Zipf distribution as the words of real
// text are, so that the messages compress like English.
//
//go:embed words.txt
var words string

// Gen makes realistic messages: 4 KB multipart/alternative newsletters
// (table layout, inline styles, quoted-printable HTML) whose plain part is
// the text of the HTML.
type Gen struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []string
}

// NewGen returns a generator; the same seed gives the same messages.
func NewGen(seed uint64) *Gen {
	ws := strings.Fields(words)
	rng := rand.New(rand.NewPCG(seed, 42))
	return &Gen{rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, uint64(len(ws)-1)), words: ws}
}

func (g *Gen) word() string { return g.words[g.zipf.Uint64()] }

// sentence returns min to max words, capitalized, ending in a full stop.
func (g *Gen) sentence(min, max int) string {
	n := min + g.rng.IntN(max-min+1)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.word()
	}
	ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
	return strings.Join(ws, " ") + "."
}

func (g *Gen) paragraph() string {
	ss := make([]string, 2+g.rng.IntN(3))
	for i := range ss {
		ss[i] = g.sentence(8, 18)
	}
	return strings.Join(ss, " ")
}

// Newsletter is one generated message, in parts.
type Newsletter struct {
	To, Site, Name, Subject, Headline, Greeting string
	Paras                                       []string
	Link, LinkText, Footer, Unsubscribe         string
	Boundary, Date, MessageID                   string
}

// Newsletter returns the next message, to the address to.
func (g *Gen) Newsletter(to string) Newsletter {
	n := Newsletter{To: to, Site: fmt.Sprintf("shop%d.example.com", g.rng.IntN(50))}
	n.Name = strings.ToUpper(n.Site[:1]) + n.Site[1:5] + " Team"
	n.Subject = strings.TrimSuffix(g.sentence(4, 9), ".")
	n.Headline = strings.TrimSuffix(g.sentence(3, 7), ".")
	n.Greeting = "Hi " + g.word() + ","
	n.Paras = make([]string, 4+g.rng.IntN(3))
	for i := range n.Paras {
		n.Paras[i] = g.paragraph()
	}
	n.Link = fmt.Sprintf("https://%s/%s/%x", n.Site, g.word(), g.rng.Uint64())
	n.LinkText = strings.TrimSuffix(g.sentence(2, 4), ".")
	n.Footer = g.sentence(8, 14)
	n.Unsubscribe = fmt.Sprintf("https://%s/unsubscribe/%x", n.Site, g.rng.Uint64())
	n.Boundary = fmt.Sprintf("=_b_%x", g.rng.Uint64())
	n.Date = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC).Format(time.RFC1123Z)
	n.MessageID = fmt.Sprintf("<%x.%x@%s>", g.rng.Uint64(), g.rng.Uint32(), n.Site)
	return n
}

// Batch returns n messages spread over inboxes inboxes (bench0@inbox.test,
// bench1@…), the same ones for the same arguments.
func Batch(n, inboxes int) []Newsletter {
	g := NewGen(1)
	out := make([]Newsletter, n)
	for i := range out {
		out[i] = g.Newsletter(fmt.Sprintf("bench%d@inbox.test", i%inboxes))
	}
	return out
}

// Messages returns Batch(n, inboxes) as smtpd's parser leaves them, and
// their recipients.
func Messages(n, inboxes int) ([]*storage.Message, []string) {
	msgs, to := make([]*storage.Message, n), make([]string, n)
	for i, nl := range Batch(n, inboxes) {
		m := nl.Message()
		msgs[i], to[i] = &m, nl.To
	}
	return msgs, to
}

// header is the message's header as the sender writes it, in order.
func (n Newsletter) header() []storage.Header {
	return []storage.Header{
		{Name: "From", Value: fmt.Sprintf("%q <news@%s>", n.Name, n.Site)},
		{Name: "To", Value: "<" + n.To + ">"},
		{Name: "Subject", Value: n.Subject},
		{Name: "Date", Value: n.Date},
		{Name: "Message-ID", Value: n.MessageID},
		{Name: "List-Unsubscribe", Value: "<" + n.Unsubscribe + ">"},
		{Name: "MIME-Version", Value: "1.0"},
		{Name: "Content-Type", Value: fmt.Sprintf("multipart/alternative; boundary=%q", n.Boundary)},
	}
}

// parsedHeader is the header as the parser lists it: the daemon's Received
// field first, each name in Go's canonical form (Message-Id).
func (n Newsletter) parsedHeader(received string) []storage.Header {
	hs := append([]storage.Header{{Name: "Received", Value: received}}, n.header()...)
	for i := range hs {
		hs[i].Name = textproto.CanonicalMIMEHeaderKey(hs[i].Name)
	}
	return hs
}

// plain is the text part, wrapped at 72 columns, with LF line endings.
func (n Newsletter) plain() string {
	lines := []string{n.Headline, "", n.Greeting}
	for _, p := range n.Paras {
		lines = append(lines, "", wrap(p, 72))
	}
	lines = append(lines, "", n.LinkText+": "+n.Link, "", n.Footer, "Unsubscribe: "+n.Unsubscribe)
	return strings.Join(lines, "\n")
}

// html returns the inside of the HTML body with each link's extra
// attributes: none as sent, bluemonday's rel and target once sanitized.
func (n Newsletter) html(linkAttrs string) string {
	var b strings.Builder
	b.WriteString(`<table width="100%" cellpadding="0" cellspacing="0" border="0" bgcolor="#f4f4f4"><tr><td align="center">` + "\n")
	b.WriteString(`<table width="600" cellpadding="0" cellspacing="0" border="0" bgcolor="#ffffff"><tr>` +
		`<td style="padding: 24px; font-family: Arial, sans-serif; font-size: 14px; line-height: 20px; color: #333333">` + "\n")
	fmt.Fprintf(&b, `<h1 style="color: #0a58ca; font-size: 22px; margin: 0 0 16px 0">%s</h1>`+"\n", n.Headline)
	fmt.Fprintf(&b, "<p>%s</p>\n", n.Greeting)
	for _, p := range n.Paras {
		fmt.Fprintf(&b, "<p style=\"margin: 0 0 12px 0\">%s</p>\n", p)
	}
	fmt.Fprintf(&b, `<p><a href="%s" style="color: #ffffff; background-color: #0a58ca; padding: 8px 16px; text-decoration: none"%s>%s</a></p>`+"\n",
		n.Link, linkAttrs, n.LinkText)
	b.WriteString("</td></tr></table>\n")
	fmt.Fprintf(&b, `<p style="font-size: 11px; color: #999999">%s <a href="%s"%s>Unsubscribe</a></p>`+"\n", n.Footer, n.Unsubscribe, linkAttrs)
	b.WriteString("</td></tr></table>")
	return b.String()
}

// Data returns the message as an SMTP client sends it, with CRLF line
// endings: about 4 KB.
func (n Newsletter) Data() []byte {
	var m bytes.Buffer
	for _, h := range n.header() {
		fmt.Fprintf(&m, "%s: %s\r\n", h.Name, h.Value)
	}
	fmt.Fprintf(&m, "\r\n--%s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n", n.Boundary)
	m.WriteString(strings.ReplaceAll(n.plain(), "\n", "\r\n"))
	fmt.Fprintf(&m, "\r\n\r\n--%s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", n.Boundary)
	sent := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>` + n.Subject + `</title>` +
		`<style>body { margin: 0; } a { color: #0a58ca; }</style></head>` + "\n" +
		`<body style="margin: 0; padding: 0">` + "\n" + n.html("") + "\n</body></html>\n"
	w := quotedprintable.NewWriter(&m)
	w.Write([]byte(strings.ReplaceAll(sent, "\n", "\r\n")))
	w.Close()
	fmt.Fprintf(&m, "\r\n--%s--\r\n", n.Boundary)
	return m.Bytes()
}

// Message returns the message as smtpd's parser leaves it, with the
// Received header the daemon adds: 2 KB of body, 1.1 KB of plain text.
func (n Newsletter) Message() storage.Message {
	received := "from loadgen.test ([127.0.0.1]) by localhost (burner) with ESMTP; " + n.Date
	raw := fmt.Appendf(nil, "Received: from loadgen.test ([127.0.0.1])\r\n\tby localhost (burner) with ESMTP;\r\n\t%s\r\n", n.Date)
	raw = append(raw, n.Data()...)

	body := n.html(` rel="nofollow noopener" target="_blank"`)
	plain := n.plain()
	visible := append([]string{n.Headline, n.Greeting}, n.Paras...)
	visible = append(visible, n.LinkText, n.Footer+" Unsubscribe")
	links := []string{n.Link, n.Unsubscribe}
	subject := n.Subject
	return storage.Message{
		From: "news@" + n.Site, FromName: n.Name, Subject: &subject, Body: &body,
		Text:    strings.Join(visible, "\n") + "\n" + strings.Join(links, "\n") + "\n" + plain,
		Plain:   plain,
		Links:   links,
		Headers: n.parsedHeader(received),
		Raw:     raw,
	}
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

// DeliverAll delivers msgs[i] to to[i] from writers goroutines, as
// concurrent SMTP sessions would, and returns how long it took.
func DeliverAll(tb testing.TB, db storage.Deliverer, msgs []*storage.Message, to []string, writers int) time.Duration {
	tb.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(msgs) {
					return
				}
				if _, err := db.Deliver(context.Background(), msgs[i], to[i:i+1]); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// Version names the cached data files: change it when the messages or the
// storage layout change.
const Version = "v8"

var (
	cacheMu sync.Mutex
	cache   = map[string]string{} // name -> path, built in this process or found
)

// File returns the path of the data file name, which build writes (to the
// path it is given) the first time on this machine: files are kept under
// $TMPDIR/burner-bench-<Version>/, as big inboxes take a while to fill.
// Open a copy (OpenCopy): the file is shared.
func File(tb testing.TB, name string, build func(path string) error) string {
	tb.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if path, ok := cache[name]; ok {
		return path
	}
	path := filepath.Join(os.TempDir(), "burner-bench-"+Version, name+".db")
	if _, err := os.Stat(path); err != nil {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		tmp := path + ".tmp"
		os.Remove(tmp)
		if err := build(tmp); err != nil {
			tb.Fatalf("build %s: %v", name, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			tb.Fatal(err)
		}
	}
	cache[name] = path
	return path
}

// Fill writes a data file at path of msgs, msgs[i] delivered to to[i]
// from 8 writers: what a build function of File does.
func Fill(tb testing.TB, path string, msgs []*storage.Message, to []string) error {
	db, err := boltdb.Open(path, boltdb.Options{})
	if err != nil {
		return err
	}
	DeliverAll(tb, db, msgs, to, 8)
	return db.Close()
}

// OpenCopy opens a copy of the data file at path, closed when tb ends.
func OpenCopy(tb testing.TB, path string) *boltdb.DB {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	dst := filepath.Join(tb.TempDir(), "burner.db")
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	db, err := boltdb.Open(dst, boltdb.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// SmokeRun reports whether benchmarks run once each (-benchtime=1x, as CI
// runs them), to check that they work rather than to measure: then they
// skip building the big files.
func SmokeRun() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && f.Value.String() == "1x"
}

// Load runs n operations from workers goroutines, each taking the next
// operation in turn: op(w, i) runs operation i on worker w and returns the
// time it measured. It returns the time the whole load took and the
// measured times, sorted. An error fails tb and stops its worker.
func Load(tb testing.TB, workers, n int, op func(w, i int) (time.Duration, error)) (time.Duration, []time.Duration) {
	var (
		next      atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, n)
	)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					break
				}
				d, err := op(w, i)
				if err != nil {
					tb.Errorf("operation %d: %v", i, err)
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
	slices.Sort(latencies)
	return elapsed, latencies
}

// Percentile returns the p-th percentile of sorted durations, 0 for none.
func Percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

// FilterQuery is one of the filters every engine's BenchmarkFilter runs.
type FilterQuery struct {
	Name  string
	Query storage.Query
}

// FilterQueries returns the filters every engine's BenchmarkFilter runs
// over the inbox bench0 of 10,000 newsletters, with a limit of 10: each
// matches none of them, so it reads them all (or rules them all out).
func FilterQueries() []FilterQuery {
	qs := []FilterQuery{
		{"subject", storage.Query{Subject: "no such subject"}},
		{"body", storage.Query{Body: "no such body text"}},
		{"search", storage.Query{Terms: []string{"order", "no-such-term"}}},
		{"header", storage.Query{Header: &storage.Header{Name: "X-Test-Run", Value: "42"}}},
	}
	for i := range qs {
		qs[i].Query.LocalPart, qs[i].Query.Limit = "bench0", 10
	}
	return qs
}

// DeliveredSession is the record smtpd makes of a session that delivers
// one message to rcpt: EHLO, MAIL, RCPT, DATA and the final dot.
func DeliveredSession(i int, start time.Time, rcpt string) storage.SMTPSession {
	id := fmt.Sprintf("0195f3b0-%04x-7000-8000-%012x", i>>48&0xffff, i)
	end := start.Add(3 * time.Millisecond)
	ok := "250 2.0.0 OK " + id
	return storage.SMTPSession{ID: id, StartedAt: start.Truncate(time.Millisecond), EndedAt: &end, Node: "mx1.example.com/[::]:25",
		Client: storage.SMTPClient{IP: "203.0.113.7", HELO: "mail.sender.example"}, MailFrom: "news@sender.example",
		Recipients: []storage.SMTPRecipient{{Address: rcpt, Inbox: new(storage.InboxName(storage.LocalPart(rcpt))), Reply: new("250 2.1.5 OK")}},
		Data:       &storage.SMTPData{Reply: &ok, Bytes: 4096},
		Outcome:    storage.SMTPDelivered,
		Transcript: []storage.TranscriptLine{
			{C: "EHLO mail.sender.example", S: "250-mx1.example.com\n250-PIPELINING\n250-8BITMIME\n250-ENHANCEDSTATUSCODES\n250-CHUNKING\n250-SMTPUTF8\n250-SIZE 10485760\n250 LIMITS RCPTMAX=100"},
			{C: "MAIL FROM:<news@sender.example>", S: "250 2.1.0 OK"},
			{C: "RCPT TO:<" + rcpt + ">", S: "250 2.1.5 OK"},
			{C: "DATA", S: "354 End data with <CR><LF>.<CR><LF>"},
			{C: ".", S: ok},
		}}
}
