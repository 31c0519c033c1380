package smtpd

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"burner/storage"
	"burner/storage/boltdb"
)

// spec §13.1: a flood of refused sessions cannot grow the store past its
// cap nor slow delivery.

// refuse sends n sessions to addr over conns connections at once, each
// refused at its RCPT (an address outside the inbox domains), and
// returns how many were answered 550.
func refuse(addr string, conns, n int) (int, error) {
	var (
		mu      sync.Mutex
		refused int
		first   error
		wg      sync.WaitGroup
	)
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += conns {
				ok, err := refuseOne(addr, i)
				mu.Lock()
				if ok {
					refused++
				}
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return refused, first
}

// refuseOne is one refused session: EHLO, MAIL, a RCPT answered 550, QUIT.
func refuseOne(addr string, i int) (bool, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "EHLO flood.test\r\nMAIL FROM:<spam@flood.test>\r\nRCPT TO:<x%d@elsewhere.test>\r\nQUIT\r\n", i)
	sc := bufio.NewScanner(c)
	refused := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "550 ") {
			refused = true
		}
		if strings.HasPrefix(sc.Text(), "221 ") {
			return refused, nil
		}
	}
	return refused, fmt.Errorf("session %d: the connection ended before 221: %v", i, sc.Err())
}

// floodDaemon runs the daemon on a bbolt file whose session log keeps at
// most maxSessions records (negative: no session log at all), logging
// sessions at rate a second (negative: no bound).
func floodDaemon(tb testing.TB, maxSessions int, rate float64, reg prometheus.Registerer) (string, *boltdb.DB) {
	db, err := boltdb.Open(filepath.Join(tb.TempDir(), "burner.db"), boltdb.Options{Retention: storage.Retention{MaxSessions: maxSessions}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	opts := Options{Domains: []string{"inbox.test"}, SessionLogRate: rate, Metrics: reg}
	if maxSessions >= 0 {
		w := NewSessionWriter(db, nil)
		tb.Cleanup(func() { w.Shutdown(context.Background()) })
		opts.SessionLog = w
	}
	return startDaemon(tb, db, opts), db
}

// Even with every refused session logged (no rate), the log never holds
// more than its cap: each batch the writer commits trims it.
func TestFloodStaysUnderCap(t *testing.T) {
	const sessions, limit = 2000, 300
	addr, db := floodDaemon(t, limit, -1, nil)
	if n, err := refuse(addr, 8, sessions); err != nil || n != sessions {
		t.Fatalf("the flood: %d of %d sessions refused, %v", n, sessions, err)
	}
	waitUntil(t, "the last batch written", func() bool {
		recs, err := db.SMTPSessions(context.Background(), storage.SMTPSessionQuery{Limit: 1})
		return err == nil && len(recs) == 1 && strings.HasPrefix(recs[0].Recipients[0].Address, "x") && recs[0].EndedAt != nil
	})
	st, err := db.Stats(context.Background())
	if err != nil || st.SMTPSessions > limit || st.SMTPSessions < limit/2 {
		t.Errorf("after %d refused sessions the log holds %d records (%v), want at most its cap of %d", sessions, st.SMTPSessions, err, limit)
	}
	if r, err := db.Check(context.Background()); err != nil || !r.OK() {
		t.Errorf("Check after the flood = %+v, %v", r, err)
	}
}

// waitUntil polls cond for 10 s at most.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkFlood is BenchmarkIngest's load into 100 bbolt inboxes, quiet,
// and beside a flood of 10,000 refused sessions (its own process, as the
// load generator is), without a session log and with one at its default
// rate (100 a second) and a cap of 1,000 records: what the log costs
// delivery in a flood is the difference of the last two, the flood's own
// cost the first two's. It reports the delivery's msgs/s, p50-ms and
// p99-ms, and for the flood the sessions refused, those logged on their
// own (logged) and counted instead (unlogged), and the records the log
// holds at the end (stored), which must not pass the cap.
func BenchmarkFlood(b *testing.B) {
	for _, tc := range []struct {
		flood int
		log   bool
	}{{0, true}, {10_000, false}, {10_000, true}} {
		flood := tc.flood
		b.Run(fmt.Sprintf("refused=%d/log=%v", tc.flood, tc.log), func(b *testing.B) {
			reg := prometheus.NewRegistry()
			maxSessions := 1000
			if !tc.log {
				maxSessions = -1
			}
			addr, db := floodDaemon(b, maxSessions, 0, reg)
			var done chan []byte
			if flood > 0 {
				done = make(chan []byte, 1)
				cmd := exec.Command(os.Args[0], "-test.run=^TestFloodGenerator$", "-test.count=1")
				cmd.Env = append(os.Environ(), fmt.Sprintf("BURNER_FLOOD=%s %d", addr, flood))
				go func() {
					out, err := cmd.CombinedOutput()
					if err != nil {
						out = append(out, err.Error()...)
					}
					done <- out
				}()
			}
			runLoad(b, addr, 100)
			if flood == 0 {
				return
			}
			out := <-done
			var refused int
			if _, err := fmt.Sscanf(string(out[strings.Index(string(out), "FLOOD"):]), "FLOOD %d", &refused); err != nil || refused != flood {
				b.Fatalf("the flood generator: %s", out)
			}
			b.ReportMetric(float64(refused), "refused")
			if !tc.log {
				return
			}
			st, err := db.Stats(context.Background())
			if err != nil || st.SMTPSessions > 1000 {
				b.Fatalf("after the flood the log holds %d records (%v), past its cap of 1000", st.SMTPSessions, err)
			}
			unlogged := counter(b, reg, "burner_smtp_sessions_unlogged_total")
			b.ReportMetric(float64(refused)-unlogged, "logged")
			b.ReportMetric(unlogged, "unlogged")
			b.ReportMetric(float64(st.SMTPSessions), "stored")
		})
	}
}

// TestFloodGenerator is BenchmarkFlood's flood, run by it as a separate
// process with BURNER_FLOOD="addr sessions": it prints "FLOOD refused".
func TestFloodGenerator(t *testing.T) {
	spec := os.Getenv("BURNER_FLOOD")
	if spec == "" {
		t.Skip("runs only as BenchmarkFlood's flood process")
	}
	var addr string
	var n int
	if _, err := fmt.Sscanf(spec, "%s %d", &addr, &n); err != nil {
		t.Fatalf("BURNER_FLOOD=%q: %v", spec, err)
	}
	refused, err := refuse(addr, 16, n)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("FLOOD %d\n", refused)
}
