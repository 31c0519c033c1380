package server

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"burner/storage"
)

func TestWaitValidation(t *testing.T) {
	a := newAPI(t)
	for _, w := range []string{"0", "61", "-1", "1.5", "x", "1e1"} {
		wantJSON(t, "wait="+w, a.call("GET", "/api/v1/emails?to=alice&wait="+w), 400, `{"error":"'wait' must be an integer from 1 to 60."}`)
	}
	// A match already there answers at once, wait or not.
	e := a.deliver("alice@example.com", storage.Message{Subject: ptr("here")})
	if got := a.listIDs(mustQuery(t, "to=alice&wait=60")); !slices.Equal(got, []string{e.ID}) {
		t.Errorf("wait=60 with a match = %v, want it at once", got)
	}
}

// waitServer is the real handler behind a middleware that reports when
// each request's handler has returned.
func waitServer(t *testing.T, a *apiTest) (*httptest.Server, chan struct{}) {
	returned := make(chan struct{}, 2000)
	h := New(a.db, Options{}, testLogger(t)).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return srv, returned
}

func TestWaitWokenByDelivery(t *testing.T) {
	a := newAPI(t)
	srv, _ := waitServer(t, a)
	got := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/emails?to=late&subject=code&wait=30", nil)
		req.Header.Set("Authorization", "Bearer "+a.key)
		got <- send(t, srv.Client(), req)
	}()
	// A delivery to another inbox and a non-matching one do not answer it.
	a.deliver("other@example.com", storage.Message{Subject: ptr("code")})
	a.deliver("late@example.com", storage.Message{Subject: ptr("newsletter")})
	e := a.deliver("late@example.com", storage.Message{Subject: ptr("your code")})
	committed := time.Now()
	select {
	case res := <-got:
		t.Logf("wait answered %v after the matching delivery committed", time.Since(committed).Round(time.Microsecond))
		if res.status != 200 || !strings.Contains(res.body, e.ID) || strings.Contains(res.body, "newsletter") {
			t.Errorf("wait answered %d %s, want the matching email only", res.status, res.body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("wait=30 did not answer within 20s of a matching delivery")
	}
}

// TestWaitWithFrom: a wait with from (spec §14) is answered by the first
// delivery from that sender, not by another sender's.
func TestWaitWithFrom(t *testing.T) {
	a := newAPI(t)
	srv, _ := waitServer(t, a)
	got := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/emails?to=late&from=Shop&wait=30", nil)
		req.Header.Set("Authorization", "Bearer "+a.key)
		got <- send(t, srv.Client(), req)
	}()
	a.deliver("late@example.com", storage.Message{From: "bank@example.com", Subject: ptr("not this one")})
	e := a.deliver("late@example.com", storage.Message{From: "noreply@example.com", FromName: "The Shop", Subject: ptr("this one")})
	select {
	case res := <-got:
		if res.status != 200 || !strings.Contains(res.body, e.ID) || strings.Contains(res.body, "not this one") {
			t.Errorf("wait with from answered %d %s, want the shop's email only", res.status, res.body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("wait=30&from=Shop did not answer within 20s of a matching delivery")
	}
}

func TestWaitTimesOut(t *testing.T) {
	a := newAPI(t)
	start := time.Now()
	wantJSON(t, "wait=1 on an empty inbox", a.call("GET", "/api/v1/emails?to=nobody&wait=1"), 200, `[]`)
	t.Logf("wait=1 answered [] after %v", time.Since(start).Round(time.Millisecond))
}

func TestWaitReleasedOnHangUp(t *testing.T) {
	a := newAPI(t)
	srv, returned := waitServer(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/emails?to=gone&wait=60", nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	errc := make(chan error, 1)
	go func() {
		_, err := srv.Client().Do(req)
		errc <- err
	}()
	// Hang up once the request is in; then its handler must return long
	// before its 60 s are up.
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-errc
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler of a long poll whose client hung up was still running 20s later")
	}
}

// TestThousandWaiters: a thousand parallel long polls on one inbox cost
// little memory, and one delivery answers them all.
func TestThousandWaiters(t *testing.T) {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < 4096 && lim.Max >= 4096 {
		lim.Cur = 4096
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	const n = 1000
	a := newAPI(t)
	srv, _ := waitServer(t, a)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n + 10}}
	defer client.CloseIdleConnections()
	before := memInUse()
	var wg sync.WaitGroup
	results := make(chan response, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", srv.URL+"/api/v1/emails?to=crowd&wait=60", nil)
			req.Header.Set("Authorization", "Bearer "+a.key)
			res, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			var body strings.Builder
			bufio.NewReader(res.Body).WriteTo(&body)
			results <- response{status: res.StatusCode, body: body.String()}
		}()
	}
	// Let the crowd gather (bounded), then measure.
	time.Sleep(2 * time.Second)
	during := memInUse()
	perWaiter := (int64(during) - int64(before)) / n
	t.Logf("%d waiters: %d KiB in use, %d bytes each (client and server side)", n, (during-before)/1024, perWaiter)
	if perWaiter > 128<<10 {
		t.Errorf("each waiter costs %d bytes, want under 128 KiB", perWaiter)
	}
	e := a.deliver("crowd@example.com", storage.Message{Subject: ptr("for all")})
	wg.Wait()
	close(results)
	got := 0
	for res := range results {
		if res.status != 200 || !strings.Contains(res.body, e.ID) {
			t.Errorf("a waiter got %d %s, want the email", res.status, res.body)
			break
		}
		got++
	}
	if got != n {
		t.Errorf("%d of %d waiters got the email", got, n)
	}
}

func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
