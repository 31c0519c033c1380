package boltdb_test

// Benchmarks of the storage hot paths on realistic messages: deliver (one
// writer, parallel writers), list newest first, the filters, and the size
// of the file. docs/performance.md says how to run them and what they
// measure on the reference machine.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"burner/internal/benchdata"
	"burner/storage"
	"burner/storage/boltdb"
)

// benchFile is a data file of realistic messages that benchmarks build once
// per machine and open copies of.
type benchFile struct {
	name     string
	messages int
	inboxes  int
}

var (
	// oneInbox holds 10,000 emails in inbox bench0.
	oneInbox = benchFile{name: "one-inbox", messages: 10_000, inboxes: 1}
	// smallInbox holds 100 emails in inbox bench0.
	smallInbox = benchFile{name: "small-inbox", messages: 100, inboxes: 1}
)

// open opens a copy of the file, building it first when needed; the copy
// is closed and removed when b ends.
func (f benchFile) open(b *testing.B) *boltdb.DB {
	b.Helper()
	name := fmt.Sprintf("storage-%s-%d", f.name, f.messages)
	return benchdata.OpenCopy(b, benchdata.File(b, name, func(path string) error {
		msgs, to := benchdata.Messages(f.messages, f.inboxes)
		return benchdata.Fill(b, path, msgs, to)
	}))
}

// TestNewsletterRoundTrip stores a realistic message and reads every part
// of it back, as TestContentRoundTrip does for the edge cases.
func TestNewsletterRoundTrip(t *testing.T) {
	msg := benchdata.NewGen(7).Newsletter("r@x.org").Message()
	boltdb.RoundTrip(t, boltdb.OpenTestDB(t, boltdb.Options{}), &msg)
}

// BenchmarkDeliver stores realistic messages, each to one of 100 inboxes,
// from one writer and from 8 (whose commits are shared).
func BenchmarkDeliver(b *testing.B) {
	msgs, to := benchdata.Messages(1000, 100)
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := boltdb.OpenTestDB(b, boltdb.Options{})
			all, allTo := make([]*storage.Message, b.N), make([]string, b.N)
			for i := range all {
				all[i], allTo[i] = msgs[i%len(msgs)], to[i%len(to)]
			}
			b.ReportAllocs()
			b.ResetTimer()
			d := benchdata.DeliverAll(b, db, all, allTo, writers)
			b.ReportMetric(float64(b.N)/d.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkList lists the newest 10 emails of an inbox of 100 and of one of
// 10,000.
func BenchmarkList(b *testing.B) {
	for _, f := range []benchFile{smallInbox, oneInbox} {
		b.Run(fmt.Sprintf("emails=%d", f.messages), func(b *testing.B) {
			if benchdata.SmokeRun() {
				f = smallInbox // skip building the big file
			}
			db := f.open(b)
			q := storage.Query{LocalPart: "bench0", Limit: 10}
			b.ReportAllocs()
			for b.Loop() {
				if es, err := db.List(context.Background(), q); err != nil || len(es) != q.Limit {
					b.Fatalf("List(%+v) = %d emails, %v; want 10", q, len(es), err)
				}
			}
		})
	}
}

// BenchmarkFilter runs the filters of benchdata.FilterQueries over an
// inbox of 10,000 emails: each matches nothing, so it reads them all.
func BenchmarkFilter(b *testing.B) {
	for _, tc := range benchdata.FilterQueries() {
		b.Run(tc.Name, func(b *testing.B) {
			f := oneInbox
			if benchdata.SmokeRun() {
				f = smallInbox // skip building the big file
			}
			db := f.open(b)
			q := tc.Query
			b.ReportAllocs()
			cpu := benchdata.CPUTime()
			for b.Loop() {
				if es, err := db.List(context.Background(), q); err != nil || len(es) != 0 {
					b.Fatalf("List(%+v) = %d emails, %v; want none", q, len(es), err)
				}
			}
			// The CPU of the process, every core: a filter over a big inbox
			// runs on all of them, so its time alone understates its cost.
			b.ReportMetric(float64(benchdata.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkFileSize delivers b.N realistic messages over 100 inboxes and
// reports the size of the data file per 10,000 messages.
func BenchmarkFileSize(b *testing.B) {
	msgs, to := benchdata.Messages(1000, 100)
	path := filepath.Join(b.TempDir(), "burner.db")
	db, err := boltdb.Open(path, boltdb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	all, allTo := make([]*storage.Message, b.N), make([]string, b.N)
	for i := range all {
		all[i], allTo[i] = msgs[i%len(msgs)], to[i%len(to)]
	}
	benchdata.DeliverAll(b, db, all, allTo, 8)
	st, err := db.Stats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.FileBytes)/float64(b.N)*10_000/1e6, "MB/10k")
}

// BenchmarkSessionRecord delivers b.N realistic messages over 100
// inboxes, each with the record of the SMTP session that delivers it (as
// smtpd hands it over: one message, one recipient) or without, and with
// the log at a cap of 500 records (each delivery then deletes the
// oldest), and reports the data in the file and the pages written per
// message: what the session log costs each delivery on disk (spec
// §13.1).
func BenchmarkSessionRecord(b *testing.B) {
	msgs, to := benchdata.Messages(1000, 100)
	for _, tc := range []struct {
		name string
		with bool
		max  int // Retention.MaxSessions
	}{{"none", false, 0}, {"record", true, 0}, {"record-at-cap", true, 500}} {
		with := tc.with
		b.Run("session="+tc.name, func(b *testing.B) {
			db := boltdb.OpenTestDB(b, boltdb.Options{Retention: storage.Retention{MaxSessions: tc.max}})
			all, allTo := make([]*storage.Message, b.N), make([]string, b.N)
			start := time.Now().UTC()
			for i := range all {
				m := *msgs[i%len(msgs)]
				if with {
					s := benchdata.DeliveredSession(i, start.Add(time.Duration(i)*time.Millisecond), to[i%len(to)])
					m.Session = &s
				}
				all[i], allTo[i] = &m, to[i%len(to)]
			}
			before, pages := boltdb.DataBytes(db), boltdb.PagesWritten(db)
			b.ResetTimer()
			benchdata.DeliverAll(b, db, all, allTo, 8)
			b.StopTimer()
			b.ReportMetric(float64(boltdb.DataBytes(db)-before)/float64(b.N), "B/msg")
			// A commit's price is its number of scattered pages
			// (docs/performance.md).
			b.ReportMetric(float64(boltdb.PagesWritten(db)-pages)/float64(b.N), "pages/msg")
		})
	}
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
	db := boltdb.OpenTestDB(t, boltdb.Options{})
	func() {
		msgs, to := benchdata.Messages(1000, 100)
		for done := 0; done < n; done += len(msgs) {
			k := min(len(msgs), n-done)
			benchdata.DeliverAll(t, db, msgs[:k], to[:k], 8)
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
