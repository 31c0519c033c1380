package server

import (
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

// healthCache keeps /healthz from costing an fsync per request: the file is
// checked at most once a second of Options.Now, whoever asks.
type healthCache struct {
	mu      sync.Mutex
	checked time.Time
	err     error
}

// handleHealthz answers 200 {"status":"ok"} when the data file takes
// writes, has room for new mail (the check delivery makes, so that the
// answer is 503 while mail gets 452 for want of space) and the listeners
// are up (Options.Ready), else 503 {"status":"unavailable"}. It needs no
// API key.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	h := &s.health
	h.mu.Lock()
	if now := s.opts.Now(); h.checked.IsZero() || now.Sub(h.checked) > time.Second || now.Before(h.checked) {
		h.err = s.db.CheckWritable(r.Context())
		if h.err == nil && s.opts.Ready != nil {
			h.err = s.opts.Ready()
		}
		h.checked = now
	}
	err := h.err
	h.mu.Unlock()
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
