package postgres_test

// Benchmarks of the PostgreSQL engine on realistic messages, for the
// figures of docs/performance.md and docs/scale.md: ingest from 8 writers beside the bbolt engine in
// the same run, listing the newest 10 of an inbox of 10,000, and the
// filters over it. Run them against a PostgreSQL on the same machine:
//
//	BURNER_TEST_POSTGRES=postgres:///postgres?host=DIR\&user=postgres \
//	  go test -run '^$' -bench . -count 10 ./storage/postgres/ | tee new.txt

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"burner/internal/benchdata"
	"burner/internal/pgtest"
	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/postgres"
)

// BenchmarkDeliver stores realistic messages, each to one of 100 inboxes,
// from 8 writers, in PostgreSQL and, for comparison, in a bbolt file; it
// reports messages per second and the p50 and p99 of a delivery (the
// time to the 250).
func BenchmarkDeliver(b *testing.B) {
	msgs, to := benchdata.Messages(1000, 100)
	for _, engine := range []string{"postgres", "bbolt"} {
		b.Run("engine="+engine+"/writers=8", func(b *testing.B) {
			var db storage.Engine
			if engine == "postgres" {
				db = openDB(b, testDatabase(b), postgres.Options{})
			} else {
				bdb, err := boltdb.Open(filepath.Join(b.TempDir(), "burner.db"), boltdb.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { bdb.Close() })
				db = bdb
			}
			b.ReportAllocs()
			b.ResetTimer()
			elapsed, lat := benchdata.Load(b, 8, b.N, func(_, i int) (time.Duration, error) {
				start := time.Now()
				_, err := db.Deliver(context.Background(), msgs[i%len(msgs)], to[i%len(to):i%len(to)+1])
				return time.Since(start), err
			})
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(benchdata.Percentile(lat, 50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(benchdata.Percentile(lat, 99).Microseconds())/1000, "p99-ms")
		})
	}
}

// filled holds a database per size of inbox, filled once per process
// (TestMain drops them): the benchmarks below only read it.
var filled struct {
	mu    sync.Mutex
	dbs   map[int]*postgres.DB
	drops []func() error
}

// inboxOf returns a database whose inbox bench0 holds n realistic emails.
func inboxOf(b *testing.B, n int) *postgres.DB {
	b.Helper()
	filled.mu.Lock()
	defer filled.mu.Unlock()
	if db, ok := filled.dbs[n]; ok {
		return db
	}
	dbURL, drop, err := pgtest.Create(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	db, err := postgres.Open(context.Background(), dbURL, postgres.Options{})
	if err != nil {
		drop()
		b.Fatal(err)
	}
	filled.drops = append(filled.drops, func() error { db.Close(); return drop() })
	msgs, to := benchdata.Messages(n, 1)
	benchdata.DeliverAll(b, db, msgs, to, 8)
	if filled.dbs == nil {
		filled.dbs = make(map[int]*postgres.DB)
	}
	filled.dbs[n] = db
	return db
}

// reportP50 reports the median of the times of b's operations, the
// figure docs/scale.md's targets are in: ns/op is their mean, which a few slow
// queries (an autovacuum, a checkpoint) pull up.
func reportP50(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(benchdata.Percentile(lat, 50).Microseconds())/1000, "p50-ms")
}

// BenchmarkList lists the newest 10 emails of an inbox of 100 and of one
// of 10,000.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("emails=%d", n), func(b *testing.B) {
			if benchdata.SmokeRun() {
				n = 100
			}
			db := inboxOf(b, n)
			q := storage.Query{LocalPart: "bench0", Limit: 10}
			b.ReportAllocs()
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				if es, err := db.List(context.Background(), q); err != nil || len(es) != q.Limit {
					b.Fatalf("List(%+v) = %d emails, %v; want 10", q, len(es), err)
				}
				lat = append(lat, time.Since(start))
			}
			reportP50(b, lat)
		})
	}
}

// BenchmarkFilter runs the filters of benchdata.FilterQueries over an
// inbox of 10,000 emails: each matches nothing, so it reads them all (in
// SQL's prefilter, or, for the header filter, in the Matcher).
func BenchmarkFilter(b *testing.B) {
	for _, tc := range benchdata.FilterQueries() {
		b.Run(tc.Name, func(b *testing.B) {
			n := 10_000
			if benchdata.SmokeRun() {
				n = 100
			}
			db := inboxOf(b, n)
			q := tc.Query
			b.ReportAllocs()
			var lat []time.Duration
			cpu := benchdata.CPUTime()
			pgCPU, pgSeen := benchdata.ProcessesCPUTime("postgres")
			for b.Loop() {
				start := time.Now()
				if es, err := db.List(context.Background(), q); err != nil || len(es) != 0 {
					b.Fatalf("List(%+v) = %d emails, %v; want none", q, len(es), err)
				}
				lat = append(lat, time.Since(start))
			}
			// The CPU of burner's process, and that of PostgreSQL's
			// processes when they run on this machine (the backend that
			// runs the query does most of the work).
			b.ReportMetric(float64(benchdata.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			if after, ok := benchdata.ProcessesCPUTime("postgres"); ok && pgSeen {
				b.ReportMetric(float64(after-pgCPU)/1e6/float64(b.N), "pg-cpu-ms/op")
			}
			reportP50(b, lat)
		})
	}
}

// BenchmarkWakeAcrossNodes measures a delivery on node A to the answer of
// a waiter on node B (spec §10: LISTEN/NOTIFY, no polling): from the call
// of Deliver on A to B's List, run when B's Changed fires, holding the
// email. Both nodes are opened on one database in this process, as two
// burner nodes on one machine would be, each with its own pool and its
// own listening connection.
func BenchmarkWakeAcrossNodes(b *testing.B) {
	dbURL := testDatabase(b)
	a, other := openDB(b, dbURL, postgres.Options{}), openDB(b, dbURL, postgres.Options{})
	msgs, _ := benchdata.Messages(1, 1)
	q := storage.Query{LocalPart: "wake", Limit: 1}
	var lat []time.Duration
	for b.Loop() {
		woken := other.Changed("wake")
		start := time.Now()
		got, err := a.Deliver(context.Background(), msgs[0], []string{"wake@x.org"})
		if err != nil {
			b.Fatal(err)
		}
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			b.Fatal("node B not woken within 5 s of a delivery on A")
		}
		es, err := other.List(context.Background(), q)
		if err != nil || len(es) != 1 || es[0].ID != got[0].ID {
			b.Fatalf("List on B after the wake-up = %d emails, %v; want the one delivered on A", len(es), err)
		}
		lat = append(lat, time.Since(start))
	}
	reportP50(b, lat)
	b.ReportMetric(float64(benchdata.Percentile(lat, 99).Microseconds())/1000, "p99-ms")
}
