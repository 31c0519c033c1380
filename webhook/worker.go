package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"burner/storage"
)

// The delivery rules of spec §9.
const (
	maxInFlight    = 4                // requests at once per hook
	defaultTimeout = 10 * time.Second // for a 2xx
	firstDelay     = 5 * time.Second  // after the first failure, ±20%
	maxDelay       = time.Hour        // between two attempts
	maxAge         = 24 * time.Hour   // from receivedAt, then dropped
	// An event is leased for at most this long, and the lease is renewed
	// while its request is in flight, so that a node that dies delays
	// its events by seconds, not minutes.
	defaultLease = 30 * time.Second
)

// Options tune New. The zero value gives spec §9's rules.
type Options struct {
	Hooks []Hook
	// Node names this node in the leases of the outbox (spec §9, §10):
	// the same across its restarts, so that a node that starts takes back
	// at once the leases of its earlier run (storage.Outbox
	// ReclaimLeases), and distinct between nodes, or one would take the
	// other's. main gives the node setting, or the host's name and the
	// SMTP address (docs/scale.md).
	Node string
	// Metrics, when set, receives the webhook series.
	Metrics prometheus.Registerer
	// Now is the clock of attempts, schedules and expiry; time.Now when nil.
	Now func() time.Time
	// Backoff returns the wait after the n-th failed attempt (n from 1);
	// nil means 5 s doubling per attempt, ±20%, at most 1 h.
	Backoff func(n int) time.Duration
	// Poll is how often the outbox is read when nothing wakes the worker,
	// for retries that come due; 0 means one second.
	Poll time.Duration
	// Timeout bounds an attempt; 0 means 10 s.
	Timeout time.Duration
	// Lease is how long a claim keeps an event from other claims; it is
	// renewed every third of it while the event's attempt runs. 0 means
	// 30 s.
	Lease time.Duration
	// DropEvery is how often events past 24 h are dropped; 0 means one
	// minute.
	DropEvery time.Duration
}

// Worker sends the events of a storage.Outbox to their hooks (spec §9).
type Worker struct {
	ob      storage.Outbox
	opts    Options
	log     *slog.Logger
	hooks   []*sender
	metrics *metrics
}

// sender is one hook with its key and its own HTTP client.
type sender struct {
	id, url string
	key     []byte
	client  *http.Client
}

// New returns the delivery worker of the hooks in opts over ob, or
// the first problem of a hook (Hook.Check). A nil log discards.
func New(ob storage.Outbox, opts Options, log *slog.Logger) (*Worker, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Backoff == nil {
		opts.Backoff = backoff
	}
	if opts.Poll == 0 {
		opts.Poll = time.Second
	}
	if opts.Timeout == 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.DropEvery == 0 {
		opts.DropEvery = time.Minute
	}
	if opts.Lease == 0 {
		opts.Lease = defaultLease
	}
	if opts.Node == "" {
		opts.Node = "burner"
	}
	w := &Worker{ob: ob, opts: opts, log: log}
	for _, h := range opts.Hooks {
		if errs := h.Check(); len(errs) > 0 {
			return nil, fmt.Errorf("webhook %s: %w", h.ID(), errors.Join(errs...))
		}
		key, _ := ParseSecret(h.Secret)
		// A transport of its own: a slow receiver ties up none of the
		// connections of anything else, and none of its idle ones.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxConnsPerHost = maxInFlight
		tr.MaxIdleConnsPerHost = maxInFlight
		w.hooks = append(w.hooks, &sender{id: h.ID(), url: h.URL, key: key, client: &http.Client{
			Transport: tr,
			Timeout:   opts.Timeout,
			// spec §9: a redirect is not followed; its 3xx is a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}})
	}
	w.metrics = newMetrics(opts.Metrics, ob, w.hookIDs(), opts.Now)
	return w, nil
}

func (w *Worker) hookIDs() []string {
	ids := make([]string, len(w.hooks))
	for i, h := range w.hooks {
		ids[i] = h.id
	}
	return ids
}

// backoff is spec §9's wait after the n-th failure: 5 s, doubling,
// ±20% so that the retries of a burst spread out, at most 1 h.
func backoff(n int) time.Duration {
	d := maxDelay
	if n < 20 {
		d = min(firstDelay<<(n-1), maxDelay)
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return min(d, maxDelay)
}

// Run sends events until ctx is done, then waits for the requests in
// flight (at most Timeout) so that a receiver that answered is not sent
// the event again, and returns.
func (w *Worker) Run(ctx context.Context) {
	// What expired while burner was down goes first, unsent.
	w.dropExpired(ctx)
	// spec §9: what this node's earlier run had in flight when it died is
	// due at once, not when its leases end.
	if n, err := w.ob.ReclaimLeases(ctx, w.opts.Node); err != nil && ctx.Err() == nil {
		w.log.Error("taking back the webhook leases of an earlier run failed", "node", w.opts.Node, "err", err)
	} else if n > 0 {
		w.log.Info("webhook leases of an earlier run taken back", "node", w.opts.Node, "events", n)
	}
	var wg sync.WaitGroup
	for _, h := range w.hooks {
		wg.Add(1)
		go func() { defer wg.Done(); w.runHook(ctx, h) }()
	}
	t := time.NewTicker(w.opts.DropEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
			w.dropExpired(ctx)
		}
	}
}

// dropExpired drops the events past 24 h that no attempt gave up on: those
// of a hook no longer configured, or that waited while burner was down.
func (w *Worker) dropExpired(ctx context.Context) {
	dropped, err := w.ob.DropEvents(ctx, w.opts.Now().Add(-maxAge))
	if err != nil && ctx.Err() == nil {
		w.log.Error("dropping expired webhook events failed", "err", err)
	}
	for hook, n := range dropped {
		w.log.Warn("webhook events dropped: not delivered within 24h", "hook", hook, "events", n)
		w.metrics.deliveries.WithLabelValues(hook, "expired").Add(float64(n))
	}
}

// runHook claims the due events of h, at most maxInFlight at a time,
// and sends each, until ctx is done.
func (w *Worker) runHook(ctx context.Context, h *sender) {
	var wg sync.WaitGroup
	defer wg.Wait()
	finished := make(chan struct{}, maxInFlight) // never blocks: at most that many send
	inFlight := 0
	tick := time.NewTicker(w.opts.Poll)
	defer tick.Stop()
	for {
		for drained := false; !drained; {
			select {
			case <-finished:
				inFlight--
			default:
				drained = true
			}
		}
		added := w.ob.EventsAdded(h.id) // before the claim: nothing slips between
		if free := maxInFlight - inFlight; free > 0 {
			evs, err := w.ob.ClaimEvents(ctx, storage.Claim{
				Hook: h.id, Node: w.opts.Node, Now: w.opts.Now(),
				Lease: w.opts.Lease, Max: free, // renewed while in flight (attempt)
			})
			if err != nil && ctx.Err() == nil {
				w.log.Error("claiming webhook events failed", "hook", h.id, "err", err)
			}
			for _, e := range evs {
				inFlight++
				wg.Add(1)
				go func() {
					defer wg.Done()
					w.attempt(ctx, h, e)
					finished <- struct{}{}
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-added:
		case <-tick.C:
		case <-finished:
			inFlight--
		}
	}
}

// attempt POSTs e to h once and records the outcome: done, or due again
// after the backoff, or dropped past 24 h.
func (w *Worker) attempt(ctx context.Context, h *sender, e storage.Event) {
	defer w.keepLease(ctx, e)()
	// Not canceled with ctx: a request in flight at shutdown finishes, so
	// that a receiver that answers gets the event once.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opts.Timeout)
	defer cancel()
	status, err := h.post(rctx, e, w.opts.Now())
	e.Attempts++
	// The store's calls must outlive ctx too: the outcome is what keeps
	// the event from being sent again.
	sctx := context.WithoutCancel(ctx)
	if err == nil && status/100 == 2 {
		w.metrics.attempts.WithLabelValues(h.id, "success").Inc()
		w.metrics.deliveries.WithLabelValues(h.id, "delivered").Inc()
		if err := w.ob.CompleteEvent(sctx, e); err != nil {
			w.log.Error("recording a webhook delivery failed: it will be sent again", "hook", h.id, "email_id", e.Email.ID, "err", err)
		}
		w.log.Info("webhook delivered", "hook", h.id, "email_id", e.Email.ID, "attempts", e.Attempts, "status", status)
		return
	}
	w.metrics.attempts.WithLabelValues(h.id, "failure").Inc()
	why := any(err)
	if err == nil {
		why = "HTTP " + strconv.Itoa(status)
	}
	now := w.opts.Now()
	next := now.Add(w.opts.Backoff(e.Attempts))
	if deadline := e.Email.ReceivedAt.Add(maxAge); !next.Before(deadline) {
		w.metrics.deliveries.WithLabelValues(h.id, "expired").Inc()
		if err := w.ob.CompleteEvent(sctx, e); err != nil {
			w.log.Error("dropping a webhook event failed", "hook", h.id, "email_id", e.Email.ID, "err", err)
		}
		w.log.Warn("webhook dropped: not delivered within 24h", "hook", h.id, "email_id", e.Email.ID,
			"attempts", e.Attempts, "last_error", why)
		return
	}
	if err := w.ob.RetryEvent(sctx, e, next); err != nil {
		w.log.Error("scheduling a webhook retry failed", "hook", h.id, "email_id", e.Email.ID, "err", err)
	}
	w.log.Debug("webhook attempt failed", "hook", h.id, "email_id", e.Email.ID, "attempts", e.Attempts,
		"next_attempt", next, "err", why)
}

// keepLease renews the lease of e every third of Options.Lease until the
// function it returns is called, so that no other claim takes e while its
// request, or the store's record of its outcome, is in flight (spec §9).
// The function returns once the renewing has stopped.
func (w *Worker) keepLease(ctx context.Context, e storage.Event) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(w.opts.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			// As the attempt, it outlives ctx: a request in flight at
			// shutdown finishes, and keeps its event meanwhile.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opts.Lease/3)
			err := w.ob.RenewLease(rctx, e, w.opts.Now().Add(w.opts.Lease))
			cancel()
			if err != nil {
				w.log.Warn("renewing a webhook lease failed: another node may send the event too", "hook", e.Hook, "email_id", e.Email.ID, "err", err)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// post sends e to h, signed at now, and returns the answer's status.
func (h *sender) post(ctx context.Context, e storage.Event, now time.Time) (int, error) {
	body := eventBody(e.Email)
	ts := strconv.FormatInt(now.Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "burner-webhooks")
	req.Header.Set("webhook-id", e.Email.ID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", sign(h.key, e.Email.ID, ts, body))
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Read a little of the answer, so that the connection can serve the
	// next attempt; a receiver has nothing to say beyond its status.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
