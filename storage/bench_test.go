package storage

// Benchmarks of the storage hot paths on realistic messages: deliver (one
// writer, parallel writers), list newest first, the filters, and the size
// of the file. docs/performance.md says how to run them and what they
// measure on the reference machine.

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// msgGen makes realistic messages as smtpd's parser turns them into a
// Message: a 4 KB multipart/alternative newsletter (table layout, inline
// styles, quoted-printable HTML) whose plain part is the text of its HTML,
// in natural-ish words drawn with a Zipf distribution from the few hundred
// of ../testdata/words.txt. smtpd/loadgen_test.go makes the same messages
// as SMTP data.
type msgGen struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []string
}

func newMsgGen(tb testing.TB, seed uint64) *msgGen {
	tb.Helper()
	data, err := os.ReadFile("../testdata/words.txt")
	if err != nil {
		tb.Fatal(err)
	}
	words := strings.Fields(string(data))
	rng := rand.New(rand.NewPCG(seed, 42))
	return &msgGen{rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1)), words: words}
}

func (g *msgGen) word() string { return g.words[g.zipf.Uint64()] }

func (g *msgGen) sentence(min, max int) string {
	n := min + g.rng.IntN(max-min+1)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.word()
	}
	ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
	return strings.Join(ws, " ") + "."
}

func (g *msgGen) paragraph() string {
	ss := make([]string, 2+g.rng.IntN(3))
	for i := range ss {
		ss[i] = g.sentence(8, 18)
	}
	return strings.Join(ss, " ")
}

// message returns a message to the address to, with every field set as
// smtpd sets it (about 4 KB raw, 2 KB body, 1.1 KB plain text).
func (g *msgGen) message(to string) *Message {
	site := fmt.Sprintf("shop%d.example.com", g.rng.IntN(50))
	name := strings.ToUpper(site[:1]) + site[1:5] + " Team"
	subject := strings.TrimSuffix(g.sentence(4, 9), ".")
	headline := strings.TrimSuffix(g.sentence(3, 7), ".")
	greeting := "Hi " + g.word() + ","
	paras := make([]string, 4+g.rng.IntN(3))
	for i := range paras {
		paras[i] = g.paragraph()
	}
	link := fmt.Sprintf("https://%s/%s/%x", site, g.word(), g.rng.Uint64())
	linkText := strings.TrimSuffix(g.sentence(2, 4), ".")
	footer := g.sentence(8, 14)
	unsubscribe := fmt.Sprintf("https://%s/unsubscribe/%x", site, g.rng.Uint64())
	boundary := fmt.Sprintf("=_b_%x", g.rng.Uint64())
	date := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC).Format(time.RFC1123Z)
	msgID := fmt.Sprintf("<%x.%x@%s>", g.rng.Uint64(), g.rng.Uint32(), site)
	received := "from loadgen.test ([127.0.0.1]) by localhost (burner) with ESMTP; " + date

	plainLines := []string{headline, "", greeting}
	for _, p := range paras {
		plainLines = append(plainLines, "", wrap(p, 72))
	}
	plainLines = append(plainLines, "", linkText+": "+link, "", footer, "Unsubscribe: "+unsubscribe)
	plain := strings.Join(plainLines, "\n")

	// The HTML as sent, and the body as bluemonday leaves it.
	var inner strings.Builder
	inner.WriteString(`<table width="100%" cellpadding="0" cellspacing="0" border="0" bgcolor="#f4f4f4"><tr><td align="center">` + "\n")
	inner.WriteString(`<table width="600" cellpadding="0" cellspacing="0" border="0" bgcolor="#ffffff"><tr>` +
		`<td style="padding: 24px; font-family: Arial, sans-serif; font-size: 14px; line-height: 20px; color: #333333">` + "\n")
	fmt.Fprintf(&inner, `<h1 style="color: #0a58ca; font-size: 22px; margin: 0 0 16px 0">%s</h1>`+"\n", headline)
	fmt.Fprintf(&inner, "<p>%s</p>\n", greeting)
	for _, p := range paras {
		fmt.Fprintf(&inner, "<p style=\"margin: 0 0 12px 0\">%s</p>\n", p)
	}
	linkStyle := `style="color: #ffffff; background-color: #0a58ca; padding: 8px 16px; text-decoration: none"`
	fmt.Fprintf(&inner, `<p><a href="%s" %s%%s>%s</a></p>`+"\n", link, linkStyle, linkText)
	inner.WriteString("</td></tr></table>\n")
	fmt.Fprintf(&inner, `<p style="font-size: 11px; color: #999999">%s <a href="%s"%%s>Unsubscribe</a></p>`+"\n", footer, unsubscribe)
	inner.WriteString("</td></tr></table>")
	const safe = ` rel="nofollow noopener" target="_blank"`
	body := fmt.Sprintf(inner.String(), safe, safe)
	sent := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>` + subject + `</title>` +
		`<style>body { margin: 0; } a { color: #0a58ca; }</style></head>` + "\n" +
		`<body style="margin: 0; padding: 0">` + "\n" + fmt.Sprintf(inner.String(), "", "") + "\n</body></html>\n"

	visible := []string{headline, greeting}
	visible = append(visible, paras...)
	visible = append(visible, linkText, footer+" Unsubscribe")
	links := []string{link, unsubscribe}
	text := strings.Join(visible, "\n") + "\n" + strings.Join(links, "\n") + "\n" + plain

	headers := []Header{
		{"Received", received},
		{"From", fmt.Sprintf("%q <news@%s>", name, site)},
		{"To", "<" + to + ">"},
		{"Subject", subject},
		{"Date", date},
		{"Message-ID", msgID},
		{"List-Unsubscribe", "<" + unsubscribe + ">"},
		{"MIME-Version", "1.0"},
		{"Content-Type", fmt.Sprintf("multipart/alternative; boundary=%q", boundary)},
	}
	var raw bytes.Buffer
	fmt.Fprintf(&raw, "Received: from loadgen.test ([127.0.0.1])\r\n\tby localhost (burner) with ESMTP;\r\n\t%s\r\n", date)
	for _, h := range headers[1:] {
		fmt.Fprintf(&raw, "%s: %s\r\n", h.Name, h.Value)
	}
	fmt.Fprintf(&raw, "\r\n--%s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n", boundary)
	raw.WriteString(strings.ReplaceAll(plain, "\n", "\r\n"))
	fmt.Fprintf(&raw, "\r\n\r\n--%s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", boundary)
	w := quotedprintable.NewWriter(&raw)
	w.Write([]byte(strings.ReplaceAll(sent, "\n", "\r\n")))
	w.Close()
	fmt.Fprintf(&raw, "\r\n--%s--\r\n", boundary)

	return &Message{
		From: "news@" + site, FromName: name, Subject: &subject, Body: &body,
		Text: text, Plain: plain, Links: links, Headers: headers, Raw: raw.Bytes(),
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

// benchMessages returns n realistic messages and their recipients, spread
// over inboxes inboxes (bench0@inbox.test, bench1@…).
func benchMessages(tb testing.TB, n, inboxes int) ([]*Message, []string) {
	g := newMsgGen(tb, 1)
	msgs, to := make([]*Message, n), make([]string, n)
	for i := range msgs {
		to[i] = fmt.Sprintf("bench%d@inbox.test", i%inboxes)
		msgs[i] = g.message(to[i])
	}
	return msgs, to
}

// deliverAll delivers msgs[i] to to[i] from writers goroutines and returns
// how long it took.
func deliverAll(tb testing.TB, db *DB, msgs []*Message, to []string, writers int) time.Duration {
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

// benchFilesVersion names the cached benchmark files: change it when the
// messages or the storage layout change.
const benchFilesVersion = "v5"

// benchFile is a data file of realistic messages that benchmarks build once
// per machine (under the temporary directory) and open copies of.
type benchFile struct {
	name     string
	messages int
	inboxes  int

	once sync.Once
	path string
	err  error
}

var (
	// oneInbox holds 10,000 emails in inbox bench0.
	oneInbox = &benchFile{name: "one-inbox", messages: 10_000, inboxes: 1}
	// smallInbox holds 100 emails in inbox bench0.
	smallInbox = &benchFile{name: "small-inbox", messages: 100, inboxes: 1}
)

// open opens a copy of the file, building it first when needed; the copy
// is closed and removed when b ends.
func (f *benchFile) open(b *testing.B) *DB {
	b.Helper()
	f.once.Do(func() {
		f.path = filepath.Join(os.TempDir(), "burner-bench-"+benchFilesVersion,
			fmt.Sprintf("storage-%s-%d.db", f.name, f.messages))
		if _, err := os.Stat(f.path); err == nil {
			return
		}
		f.err = f.build(b)
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(b.TempDir(), "burner.db")
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		b.Fatal(err)
	}
	db, err := Open(dst, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func (f *benchFile) build(b *testing.B) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return err
	}
	tmp := f.path + ".tmp"
	os.Remove(tmp)
	db, err := Open(tmp, Options{})
	if err != nil {
		return err
	}
	msgs, to := benchMessages(b, f.messages, f.inboxes)
	deliverAll(b, db, msgs, to, 8)
	if err := db.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

// smokeRun reports whether benchmarks run once each (-benchtime=1x, as CI
// runs them), to check that they work rather than to measure: then they
// skip building the big files.
func smokeRun() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && f.Value.String() == "1x"
}

// BenchmarkDeliver stores realistic messages, each to one of 100 inboxes,
// from one writer and from 8 (whose commits are shared).
func BenchmarkDeliver(b *testing.B) {
	msgs, to := benchMessages(b, 1000, 100)
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := openDB(b, Options{})
			all, allTo := make([]*Message, b.N), make([]string, b.N)
			for i := range all {
				all[i], allTo[i] = msgs[i%len(msgs)], to[i%len(to)]
			}
			b.ReportAllocs()
			b.ResetTimer()
			d := deliverAll(b, db, all, allTo, writers)
			b.ReportMetric(float64(b.N)/d.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkList lists the newest 10 emails of an inbox of 100 and of one of
// 10,000.
func BenchmarkList(b *testing.B) {
	for _, f := range []*benchFile{smallInbox, oneInbox} {
		b.Run(fmt.Sprintf("emails=%d", f.messages), func(b *testing.B) {
			if smokeRun() {
				f = smallInbox // skip building the big file
			}
			db := f.open(b)
			q := Query{LocalPart: "bench0", Limit: 10}
			b.ReportAllocs()
			for b.Loop() {
				if es, err := db.List(context.Background(), q); err != nil || len(es) != q.Limit {
					b.Fatalf("List(%+v) = %d emails, %v; want 10", q, len(es), err)
				}
			}
		})
	}
}

// BenchmarkFilter runs the filters over an inbox of 10,000 emails: each
// query matches nothing (or one email, the oldest), so it reads them all.
func BenchmarkFilter(b *testing.B) {
	for _, tc := range []struct {
		name string
		q    Query
	}{
		{"subject", Query{Subject: "no such subject"}},
		{"body", Query{Body: "no such body text"}},
		{"search", Query{Terms: []string{"order", "no-such-term"}}},
		{"header", Query{Header: &Header{"X-Test-Run", "42"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f := oneInbox
			if smokeRun() {
				f = smallInbox // skip building the big file
			}
			db := f.open(b)
			q := tc.q
			q.LocalPart, q.Limit = "bench0", 10
			b.ReportAllocs()
			for b.Loop() {
				if es, err := db.List(context.Background(), q); err != nil || len(es) != 0 {
					b.Fatalf("List(%+v) = %d emails, %v; want none", q, len(es), err)
				}
			}
		})
	}
}

// BenchmarkFileSize delivers b.N realistic messages over 100 inboxes and
// reports the size of the data file per 10,000 messages.
func BenchmarkFileSize(b *testing.B) {
	msgs, to := benchMessages(b, 1000, 100)
	path := filepath.Join(b.TempDir(), "burner.db")
	db, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	all, allTo := make([]*Message, b.N), make([]string, b.N)
	for i := range all {
		all[i], allTo[i] = msgs[i%len(msgs)], to[i%len(to)]
	}
	deliverAll(b, db, all, allTo, 8)
	st, err := db.Stats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.FileBytes)/float64(b.N)*10_000/1e6, "MB/10k")
}

// TestMemoryAfterIngest stores BURNER_MEM_MESSAGES (unset: skipped)
// realistic messages from 8 writers, as the daemon would, and logs the
// anonymous resident memory of the process (RssAnon; bbolt's file-backed
// mmap does not count) once the test has dropped its own copies of the
// messages, with the Go heap's view of it.
func TestMemoryAfterIngest(t *testing.T) {
	n := 0
	fmt.Sscan(os.Getenv("BURNER_MEM_MESSAGES"), &n)
	if n == 0 {
		t.Skip("set BURNER_MEM_MESSAGES=100000 to run")
	}
	db := openDB(t, Options{})
	func() {
		msgs, to := benchMessages(t, 1000, 100)
		for done := 0; done < n; done += len(msgs) {
			k := min(len(msgs), n-done)
			deliverAll(t, db, msgs[:k], to[:k], 8)
		}
	}()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st, err := db.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d messages: RssAnon %.1f MB (Go heap in use %.1f MB, idle %.1f MB, released %.1f MB; runtime total %.1f MB), file %d MB",
		n, mb(rssAnon(t)), mb(int64(ms.HeapInuse)), mb(int64(ms.HeapIdle)), mb(int64(ms.HeapReleased)), mb(int64(ms.Sys)), st.FileBytes>>20)
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// rssAnon returns the anonymous resident memory of the process in bytes.
func rssAnon(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if kb, ok := strings.CutPrefix(s.Text(), "RssAnon:"); ok {
			var n int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), &n)
			return n << 10
		}
	}
	t.Skip("no RssAnon in /proc/self/status")
	return 0
}
