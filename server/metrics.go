package server

import (
	"net/http"
	"strconv"
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
