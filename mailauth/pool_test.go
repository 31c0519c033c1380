package mailauth

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"burner/internal/dnstest"
	"burner/storage"

	"github.com/prometheus/client_golang/prometheus"
)

// verdicts collects what Done receives.
type verdicts struct {
	mu  sync.Mutex
	got map[string]storage.AuthResult // by the job's first id
	ch  chan string
}

func newVerdicts() *verdicts {
	return &verdicts{got: map[string]storage.AuthResult{}, ch: make(chan string, 100)}
}

func (vs *verdicts) done(_ context.Context, j Job, r storage.AuthResult) {
	vs.mu.Lock()
	vs.got[j.IDs[0]] = r
	vs.mu.Unlock()
	vs.ch <- j.IDs[0]
}

// wait waits for the verdict of id.
func (vs *verdicts) wait(t *testing.T, id string) storage.AuthResult {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		vs.mu.Lock()
		r, ok := vs.got[id]
		vs.mu.Unlock()
		if ok {
			return r
		}
		select {
		case <-vs.ch:
		case <-deadline:
			t.Fatalf("no verdict for job %s", id)
		}
	}
}

func TestPool(t *testing.T) {
	z := exampleWorld(t)
	vs := newVerdicts()
	v := newTestVerifier(t, Options{Resolver: z.Addr, Workers: 2, QueueSize: 8}, vs.done)
	raw := dnstest.Sign(t, testMessage("a@example.test", "Hi.\r\n"), "example.test", "s1", testKeys().rsa)
	for i := range 5 {
		env := envelope("192.0.2.10", "mail.example.test", "bounce@example.test")
		if i == 4 {
			env.MailFrom = "bounce@elsewhere.test"
		}
		if err := v.Submit(Job{IDs: []string{fmt.Sprint(i), "copy"}, Envelope: env, Raw: raw}); err != nil {
			t.Fatalf("Submit(job %d) = %v, want nil", i, err)
		}
	}
	// Shutdown drains the queue: every verdict is in when it returns.
	if err := v.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if len(vs.got) != 5 {
		t.Fatalf("after Shutdown, Done has received %d verdicts, want 5", len(vs.got))
	}
	for i := range 4 {
		r := vs.got[fmt.Sprint(i)]
		if r.Status != storage.AuthDone || r.SPF.Result != storage.AuthPass || r.DMARC.Result != storage.AuthPass {
			t.Errorf("verdict of job %d = %+v, want done, SPF and DMARC pass", i, r)
		}
	}
	if r := vs.got["4"]; r.SPF != (storage.SPFResult{Result: storage.AuthNone, Domain: "elsewhere.test"}) {
		t.Errorf("verdict of job 4 = %+v, want its own envelope's SPF", r.SPF)
	}
	if err := v.Submit(Job{IDs: []string{"late"}, Raw: raw}); !errors.Is(err, ErrOverloaded) {
		t.Errorf("Submit after Shutdown = %v, want ErrOverloaded", err)
	}
}

// TestPoolBusy: with the one worker held by a DNS server that never
// answers and the queue full, Submit returns at once and the job's verdict
// is temperror "busy"; Shutdown that gives up leaves the held jobs without
// a verdict (pending, for whoever finds them).
func TestPoolBusy(t *testing.T) {
	addr, asked := dnstest.Blackhole(t)
	vs := newVerdicts()
	reg := prometheus.NewRegistry()
	v := newTestVerifier(t, Options{Resolver: addr, Workers: 1, QueueSize: 1, Timeout: time.Hour, Metrics: reg}, vs.done)
	raw := testMessage("a@example.test", "Hi.\r\n")
	for range 7 {
		raw = dnstest.Sign(t, raw, "example.test", "s1", testKeys().ed)
	}
	env := envelope("192.0.2.10", "mail.example.test", "bounce@example.test")
	if err := v.Submit(Job{IDs: []string{"held"}, Envelope: env, Raw: raw}); err != nil {
		t.Fatalf("Submit(held) = %v", err)
	}
	select { // the worker is in the held job's lookups
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never asked the DNS server")
	}
	if err := v.Submit(Job{IDs: []string{"queued"}, Envelope: env, Raw: raw}); err != nil {
		t.Fatalf("Submit(queued) = %v, want nil", err)
	}
	if err := v.Submit(Job{IDs: []string{"busy"}, Envelope: env, Raw: raw}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Submit with the queue full = %v, want ErrBusy", err)
	}
	r := vs.wait(t, "busy")
	if r.Status != storage.AuthDone || r.SPF != (storage.SPFResult{Result: storage.AuthTempError, Domain: "example.test"}) ||
		r.DMARC.Result != storage.AuthTempError || r.DMARC.Domain != "example.test" || len(r.DKIM) != 7 ||
		!strings.Contains(r.AuthenticationResults, "spf=temperror reason=busy") {
		t.Errorf("busy verdict = %+v", r)
	}
	for i, d := range r.DKIM {
		want := storage.DKIMResult{Result: storage.AuthTempError, Domain: "example.test", Selector: "s1", Error: "busy"}
		if i >= 5 {
			want.Result, want.Error = storage.AuthPermError, "too many signatures"
		}
		if d != want {
			t.Errorf("busy verdict, signature %d: %+v, want %+v", i+1, d, want)
		}
	}
	if m := gather(t, reg); m[`burner_auth_jobs_total{outcome="busy"}`] != 1 {
		t.Errorf("jobs busy = %v, want 1", m[`burner_auth_jobs_total{outcome="busy"}`])
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := v.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with a job held = %v, want DeadlineExceeded", err)
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if ids := slices.Sorted(maps.Keys(vs.got)); !slices.Equal(ids, []string{"busy"}) {
		t.Errorf("Done received verdicts for %q, want only the busy one: the others stay pending", ids)
	}
}

// TestPoolOverloaded: when Done is so slow that the busy verdicts pile up
// to the lane's bound, Submit refuses jobs, still without waiting.
func TestPoolOverloaded(t *testing.T) {
	addr, asked := dnstest.Blackhole(t)
	release := make(chan struct{})
	done := func(ctx context.Context, _ Job, _ storage.AuthResult) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	v := newTestVerifier(t, Options{Resolver: addr, Workers: 1, QueueSize: 1, Timeout: time.Hour}, done)
	raw := testMessage("a@example.test", "Hi.\r\n")
	env := envelope("192.0.2.10", "mail.example.test", "bounce@example.test")
	if err := v.Submit(Job{IDs: []string{"held"}, Envelope: env, Raw: raw}); err != nil {
		t.Fatal(err)
	}
	<-asked
	busy, overloaded := 0, 0
	for i := 0; i < 3*busyLane && overloaded == 0; i++ {
		switch err := v.Submit(Job{IDs: []string{fmt.Sprint(i)}, Envelope: env, Raw: raw}); {
		case err == nil:
		case errors.Is(err, ErrBusy):
			busy++
		case errors.Is(err, ErrOverloaded):
			overloaded++
		default:
			t.Fatalf("Submit = %v", err)
		}
	}
	if overloaded != 1 || busy < busyLane || busy > busyLane+1 {
		t.Errorf("Submit: %d busy, %d overloaded; want %d or %d busy (the lane, and the one Done holds), then overloaded", busy, overloaded, busyLane, busyLane+1)
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	v.Shutdown(ctx) // the held job gives up; the busy verdicts drain
}

func TestMaxDelay(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want time.Duration
	}{
		{Options{}, 5 * time.Second * (1 + 128/8)},
		{Options{Timeout: time.Second, Workers: 3, QueueSize: 7}, time.Second * (1 + 3)},
		{Options{Timeout: time.Second, Workers: 1, QueueSize: 1}, 2 * time.Second},
	} {
		c.opts.Resolver = "127.0.0.1:1"
		if got := newTestVerifier(t, c.opts, nil).MaxDelay(); got != c.want {
			t.Errorf("MaxDelay with %+v = %v, want %v", c.opts, got, c.want)
		}
	}
}
