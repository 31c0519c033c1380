package server

// The HTTP list benchmark: parallel clients over real TCP against the real
// handler, on inboxes of realistic messages. docs/performance.md says how
// to run it.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"burner/storage"
)

// benchMessage returns a message of the kind the storage and smtpd
// benchmarks make: a 2 KB table-layout newsletter body, as smtpd leaves it,
// in natural-ish words (../testdata/words.txt).
func benchMessage(rng *rand.Rand, words []string, zipf *rand.Zipf) storage.Message {
	sentence := func(min, max int) string {
		ws := make([]string, min+rng.IntN(max-min+1))
		for i := range ws {
			ws[i] = words[zipf.Uint64()]
		}
		ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
		return strings.Join(ws, " ") + "."
	}
	site := fmt.Sprintf("shop%d.example.com", rng.IntN(50))
	subject := strings.TrimSuffix(sentence(4, 9), ".")
	var body, text strings.Builder
	body.WriteString(`<table width="100%" cellpadding="0" cellspacing="0" border="0" bgcolor="#f4f4f4"><tr><td align="center">` + "\n" +
		`<table width="600" cellpadding="0" cellspacing="0" border="0" bgcolor="#ffffff"><tr>` +
		`<td style="padding: 24px; font-family: Arial, sans-serif; font-size: 14px; line-height: 20px; color: #333333">` + "\n")
	for range 4 + rng.IntN(3) {
		p := sentence(8, 18) + " " + sentence(8, 18) + " " + sentence(8, 18)
		fmt.Fprintf(&body, "<p style=\"margin: 0 0 12px 0\">%s</p>\n", p)
		text.WriteString(p + "\n")
	}
	link := fmt.Sprintf("https://%s/track/%x", site, rng.Uint64())
	fmt.Fprintf(&body, `<p><a href="%s" rel="nofollow noopener" target="_blank">Track it</a></p>`+"\n</td></tr></table>\n</td></tr></table>", link)
	text.WriteString("Track it\n" + link)
	b := body.String()
	return storage.Message{
		From: "news@" + site, FromName: "Shop Team", Subject: &subject, Body: &b,
		Text: text.String(), Plain: text.String(), Links: []string{link},
		Headers: []storage.Header{{Name: "Subject", Value: subject}},
		Raw:     []byte("Subject: " + subject + "\r\nContent-Type: text/html\r\n\r\n" + b),
	}
}

// benchFilesVersion names the cached benchmark files: change it when the
// messages or the storage layout change.
const benchFilesVersion = "v5"

var benchInboxes sync.Map // size -> *benchInbox

type benchInbox struct {
	once sync.Once
	path string
	err  error
}

// openBenchInbox opens a copy of a data file whose inbox bench holds n
// realistic emails, built once per machine under the temporary directory.
func openBenchInbox(b *testing.B, n int) *storage.DB {
	b.Helper()
	v, _ := benchInboxes.LoadOrStore(n, &benchInbox{})
	f := v.(*benchInbox)
	f.once.Do(func() {
		f.path = filepath.Join(os.TempDir(), "burner-bench-"+benchFilesVersion, fmt.Sprintf("server-inbox-%d.db", n))
		if _, err := os.Stat(f.path); err == nil {
			return
		}
		f.err = buildBenchInbox(b, f.path, n)
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
	db, err := storage.Open(dst, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func buildBenchInbox(b *testing.B, path string, n int) error {
	words, err := os.ReadFile("../testdata/words.txt")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	db, err := storage.Open(tmp, storage.Options{})
	if err != nil {
		return err
	}
	ws := strings.Fields(string(words))
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		first atomic.Value
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(ws)-1))
			for next.Add(1) <= int64(n) {
				m := benchMessage(rng, ws, zipf)
				if _, err := db.Deliver(context.Background(), &m, []string{"bench@inbox.test"}); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := db.Close(); err != nil {
		return err
	}
	if err, ok := first.Load().(error); ok {
		return err
	}
	return os.Rename(tmp, path)
}

// smokeRun reports whether benchmarks run once each (-benchtime=1x, as CI
// runs them), to check that they work rather than to measure: then they
// skip building the big files.
func smokeRun() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && f.Value.String() == "1x"
}

// listClients is the number of parallel clients of BenchmarkListHTTPParallel.
const listClients = 8

// BenchmarkListHTTPParallel lists the newest 10 emails (limit=10) of an
// inbox of 100 and of one of 10,000 with 8 parallel clients, each with its
// own keep-alive connection to the real handler on a real listener, and
// reports requests a second and the latency of a request (p50, p99).
func BenchmarkListHTTPParallel(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("emails=%d", n), func(b *testing.B) {
			if smokeRun() {
				n = 100
			}
			db := openBenchInbox(b, n)
			_, key, err := db.CreateKey(context.Background(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(New(db, Options{}, slog.New(slog.DiscardHandler)).Handler())
			b.Cleanup(srv.Close)
			tr := &http.Transport{MaxIdleConnsPerHost: listClients, MaxConnsPerHost: listClients}
			b.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr}
			url := srv.URL + "/api/v1/emails?to=bench&limit=10"
			get := func() (time.Duration, error) {
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				start := time.Now()
				res, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err == nil && res.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", res.StatusCode)
				}
				return time.Since(start), err
			}
			for range listClients { // open the connections
				if _, err := get(); err != nil {
					b.Fatal(err)
				}
			}
			var (
				next      atomic.Int64
				wg        sync.WaitGroup
				mu        sync.Mutex
				latencies = make([]time.Duration, 0, b.N)
			)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range listClients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					for next.Add(1) <= int64(b.N) {
						d, err := get()
						if err != nil {
							b.Error(err)
							return
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
			b.StopTimer()
			slices.Sort(latencies)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			b.ReportMetric(percentile(latencies, 50).Seconds()*1000, "p50-ms")
			b.ReportMetric(percentile(latencies, 99).Seconds()*1000, "p99-ms")
		})
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}
