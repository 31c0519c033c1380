package mailauth

import (
	"burner/storage"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the verifier's Prometheus series. They exist even when
// nobody registers them, so the code that counts never checks.
type metrics struct {
	results *prometheus.CounterVec
	jobs    *prometheus.CounterVec
	seconds prometheus.Histogram
}

// What became of a submitted job, the values of the outcome label.
const (
	jobVerified   = "verified"   // verified by a worker
	jobBusy       = "busy"       // the queue was full: temperror "busy"
	jobOverloaded = "overloaded" // not even the busy verdict could wait: left pending
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "burner_auth_results_total", Help: "Verdicts on received messages, by method (spf, dkim per signature, dmarc) and RFC 8601 result.",
		}, []string{"method", "result"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "burner_auth_jobs_total", Help: "Messages submitted for verification, by outcome (verified, busy, overloaded).",
		}, []string{"outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "burner_auth_verify_seconds",
			Help:    "Time to verify one message: SPF, DKIM, DMARC and FCrDNS, DNS included.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
	// Present at 0, so that rates work from the start.
	words := map[string][]storage.AuthValue{
		"spf":   {storage.AuthNone, storage.AuthNeutral, storage.AuthPass, storage.AuthFail, storage.AuthSoftFail, storage.AuthTempError, storage.AuthPermError},
		"dkim":  {storage.AuthPass, storage.AuthFail, storage.AuthNeutral, storage.AuthTempError, storage.AuthPermError},
		"dmarc": {storage.AuthNone, storage.AuthPass, storage.AuthFail, storage.AuthTempError, storage.AuthPermError},
	}
	for method, ws := range words {
		for _, w := range ws {
			m.results.WithLabelValues(method, string(w))
		}
	}
	for _, o := range []string{jobVerified, jobBusy, jobOverloaded} {
		m.jobs.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.results, m.jobs, m.seconds)
	}
	return m
}

// count adds the verdicts of r to the results.
func (m *metrics) count(r storage.AuthResult) {
	m.results.WithLabelValues("spf", string(r.SPF.Result)).Inc()
	for _, d := range r.DKIM {
		m.results.WithLabelValues("dkim", string(d.Result)).Inc()
	}
	m.results.WithLabelValues("dmarc", string(r.DMARC.Result)).Inc()
}
