package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics are the API's Prometheus series. They exist even when nobody
// registers them, so the code that counts never checks.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "burner_http_requests_total", Help: "HTTP requests answered, by route and status.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "burner_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, 1, 5, 60},
		}, []string{"route"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency)
	}
	return m
}

// observe counts one answered request. The route is the mux pattern that
// matched (so ids do not make a series each), or "other".
func (m *httpMetrics) observe(r *http.Request, code int, d time.Duration) {
	route := r.Pattern
	if route == "" || route == "/" {
		route = "other"
	}
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// metricsHandler serves Options.Metrics in the Prometheus text format.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.opts.Metrics, promhttp.HandlerOpts{ErrorLog: promLog{s}})
}

// promLog gives promhttp our logger.
type promLog struct{ s *Server }

func (l promLog) Println(v ...any) { l.s.log.Error("metrics", "err", v) }

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
		h.err = s.db.CheckWritable(ctx)
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
