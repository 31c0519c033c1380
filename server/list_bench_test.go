package server

// The HTTP list benchmark: parallel clients over real TCP against the real
// handler, on inboxes of realistic messages. docs/performance.md says how
// to run it.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"burner/internal/benchdata"
	"burner/storage"
	"burner/storage/boltdb"
)

// openBenchInbox opens a copy of a data file whose inbox bench0 holds n
// realistic emails, built once per machine.
func openBenchInbox(b *testing.B, n int) *boltdb.DB {
	b.Helper()
	path := benchdata.File(b, fmt.Sprintf("server-inbox-%d", n), func(path string) error {
		msgs, to := benchdata.Messages(n, 1)
		return benchdata.Fill(b, path, msgs, to)
	})
	return benchdata.OpenCopy(b, path)
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
			if benchdata.SmokeRun() {
				n = 100
			}
			loadHTTP(b, openBenchInbox(b, n), "/api/v1/emails?to=bench0&limit=10", listClients)
		})
	}
}

// BenchmarkSearchHTTP runs a search and a body filter that match nothing
// over an inbox of 10,000, so that each reads the whole inbox, from one
// client and from 8, and reports answers a second, the latency (p50,
// p99) and the CPU of the process per answer.
func BenchmarkSearchHTTP(b *testing.B) {
	for _, q := range []string{"search=order+no-such-term", "body=no+such+body+text"} {
		for _, clients := range []int{1, listClients} {
			b.Run(fmt.Sprintf("%s/clients=%d", q[:strings.IndexByte(q, '=')], clients), func(b *testing.B) {
				n := 10_000
				if benchdata.SmokeRun() {
					n = 100
				}
				loadHTTP(b, openBenchInbox(b, n), "/api/v1/emails?to=bench0&limit=10&"+q, clients)
			})
		}
	}
}

// loadHTTP sends b.N GETs of path from clients parallel clients, each with
// its own keep-alive connection to db's real handler on a real listener.
func loadHTTP(b *testing.B, db *boltdb.DB, path string, clients int) {
	_, key, err := db.CreateKey(context.Background(), "bench", storage.Scope{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(New(db, Options{}, slog.New(slog.DiscardHandler)).Handler())
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	url := srv.URL + path
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
	for range clients { // open the connections
		if _, err := get(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchdata.CPUTime()
	elapsed, latencies := benchdata.Load(b, clients, b.N, func(int, int) (time.Duration, error) { return get() })
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(benchdata.Percentile(latencies, 50).Seconds()*1000, "p50-ms")
	b.ReportMetric(benchdata.Percentile(latencies, 99).Seconds()*1000, "p99-ms")
	// The clients are in this process too: their share is in the figure.
	b.ReportMetric(float64(benchdata.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
}
