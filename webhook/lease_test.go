package webhook

import (
	"context"
	"net/http"
	"testing"
	"time"

	"burner/storage/boltdb"
)

// TestWebhooksLeaseRenewed: a request that outlasts the lease keeps its
// event from the other workers, as its lease is renewed while it is in
// flight (spec §9): two workers on one store, leases of 1 s, and a
// receiver that answers after 3.5 s get one request, not several. (A lease
// of 300 ms was lost on a loaded CI machine, where a renewal due every
// 100 ms can wait longer than the 200 ms it has.)
func TestWebhooksLeaseRenewed(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3500 * time.Millisecond):
		case <-r.Context().Done():
		}
	})
	hook := Hook{URL: rc.URL, Secret: testSecret}
	db := openDB(t, boltdb.Options{Hooks: hooksOf(hook)})
	for _, node := range []string{"a", "b"} {
		startWorker(t, db, Options{Hooks: []Hook{hook}, Node: node, Poll: 10 * time.Millisecond,
			Timeout: 5 * time.Second, Lease: time.Second})
	}
	sendTo(t, db, "slow", "alice@x.test")
	waitFor(t, "the event delivered", func() bool { w, _ := db.Waiting(context.Background()); return len(w) == 0 })
	if got := rc.requests(); len(got) != 1 || rc.most.Load() != 1 {
		t.Errorf("the receiver got %d requests, at most %d at once; want 1: the lease was renewed while it was in flight", len(got), rc.most.Load())
	}
}
