package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// healthCache keeps /healthz and the writable gauge from costing an fsync
// per request: the store is checked at most once a second of Options.Now,
// whoever asks.
type healthCache struct {
	mu      sync.Mutex
	checked time.Time
	err     error
}

// storeHealth returns the store's CheckWritable, at most a second old:
// nil while new mail would be stored now (spec §5).
func (s *Server) storeHealth(ctx context.Context) error {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if now := s.opts.Now(); h.checked.IsZero() || now.Sub(h.checked) > time.Second || now.Before(h.checked) {
		h.err = s.admin.CheckWritable(ctx)
		h.checked = now
	}
	return h.err
}

// newHealthGauge returns burner_storage_writable, the store half of
// /healthz as a series: 1 while new mail would be stored now, else 0.
func (s *Server) newHealthGauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "burner_storage_writable",
		Help: "1 while the store takes new mail (the check of /healthz: it takes writes, has room, and the last delivery's commit did not fail), else 0.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if s.storeHealth(ctx) != nil {
			return 0
		}
		return 1
	})
}

// handleHealthz answers 200 {"status":"ok"} when new mail would be stored
// now: the store takes writes, has room for new mail (the check delivery
// makes, so that the answer is 503 while mail gets 452 for want of space),
// and the last delivery's commit did not fail for a storage reason with
// none succeeding since (spec §5); and when the listeners are up
// (Options.Ready). Else 503 {"status":"unavailable"}. It needs no API key.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	err := s.storeHealth(r.Context())
	if err == nil && s.opts.Ready != nil {
		err = s.opts.Ready()
	}
	type health struct {
		Status string `json:"status"`
	}
	if err != nil {
		s.log.WarnContext(r.Context(), "health check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, health{"unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, health{"ok"})
}
