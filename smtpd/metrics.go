package smtpd

import (
	"github.com/prometheus/client_golang/prometheus"

	"burner/storage"
)

// metrics are the daemon's Prometheus series. They exist even when nobody
// registers them, so the code that counts never checks.
type metrics struct {
	sessions  prometheus.Counter
	refused   *prometheus.CounterVec
	accepted  prometheus.Counter
	rejected  *prometheus.CounterVec
	bytes     prometheus.Counter
	ingestLag prometheus.Histogram
	faults    *prometheus.CounterVec // by stage
	unlogged  prometheus.Counter
}

// Reasons a message is rejected, the values of the reason label.
const (
	rejectDomain    = "recipient_domain"
	rejectMailbox   = "recipient_invalid"
	rejectTooLarge  = "too_large"
	rejectFull      = "storage_full"
	rejectStorage   = "storage_error"
	rejectAborted   = "aborted"
	rejectRecovered = "panic"
)

// Reasons a connection is refused, the values of the reason label.
const (
	refusedTotal      = "max_connections"
	refusedPerAddress = "per_address"
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		sessions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "burner_smtp_sessions_total", Help: "SMTP sessions started.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "burner_smtp_connections_refused_total", Help: "SMTP connections answered 421 because too many were open, in all or from one address.",
		}, []string{"reason"}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "burner_smtp_messages_accepted_total", Help: "Messages answered 250 after DATA.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "burner_smtp_rejected_total", Help: "Recipients and messages refused, by reason.",
		}, []string{"reason"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "burner_smtp_received_bytes_total", Help: "Bytes of accepted messages.",
		}),
		ingestLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "burner_smtp_ingest_seconds",
			Help:    "From the end of DATA to the durable commit of the message.",
			Buckets: []float64{.0005, .001, .002, .003, .005, .01, .025, .05, .1, .25, 1},
		}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "burner_faults_injected_total", Help: "Replies and disconnects of fault rules (spec §13.2), by stage.",
		}, []string{"stage"}),
		unlogged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "burner_smtp_sessions_unlogged_total", Help: "SMTP sessions past smtp.session_log_rate that stored no mail: counted, not logged (spec §13.1).",
		}),
	}
	for _, r := range []string{rejectDomain, rejectMailbox, rejectTooLarge, rejectFull, rejectStorage, rejectAborted, rejectRecovered} {
		m.rejected.WithLabelValues(r) // present at 0, so rates work from the start
	}
	m.refused.WithLabelValues(refusedTotal)
	m.refused.WithLabelValues(refusedPerAddress)
	m.faults.WithLabelValues(string(storage.FaultAtRcpt))
	m.faults.WithLabelValues(string(storage.FaultAtData))
	if reg != nil {
		reg.MustRegister(m.sessions, m.refused, m.accepted, m.rejected, m.bytes, m.ingestLag, m.faults, m.unlogged)
	}
	return m
}
