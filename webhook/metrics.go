package webhook

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"burner/storage"
)

// metrics are the webhook series of spec §9. They exist even when
// nobody registers them, so the code that counts never checks.
type metrics struct {
	deliveries *prometheus.CounterVec
	attempts   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, ob storage.Outbox, hooks []string, now func() time.Time) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "burner_webhook_deliveries_total",
			Help: "Webhook events settled, by hook and outcome: delivered, or expired (dropped after 24h).",
		}, []string{"hook", "outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "burner_webhook_attempts_total", Help: "Webhook requests made, by hook and result (success: a 2xx in time).",
		}, []string{"hook", "result"}),
	}
	for _, h := range hooks { // a series from the start, so that rate() sees the first event
		m.deliveries.WithLabelValues(h, "delivered")
		m.deliveries.WithLabelValues(h, "expired")
		m.attempts.WithLabelValues(h, "success")
		m.attempts.WithLabelValues(h, "failure")
	}
	if reg != nil {
		reg.MustRegister(m.deliveries, m.attempts, &outboxCollector{ob: ob, hooks: hooks, now: now})
	}
	return m
}

var (
	descWaiting = prometheus.NewDesc("burner_webhook_events_waiting", "Webhook events not yet delivered nor dropped, by hook.", []string{"hook"}, nil)
	descOldest  = prometheus.NewDesc("burner_webhook_oldest_event_age_seconds", "Age of the oldest webhook event waiting, by hook; 0 when none waits.", []string{"hook"}, nil)
)

// outboxCollector reads what waits in the outbox at each scrape.
type outboxCollector struct {
	ob    storage.Outbox
	hooks []string // configured: reported at 0 when nothing waits
	now   func() time.Time
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descWaiting
	ch <- descOldest
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	waiting, err := c.ob.Waiting(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descWaiting, err)
		return
	}
	seen := make(map[string]bool)
	for _, w := range waiting {
		seen[w.Hook] = true
		ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(w.Events), w.Hook)
		ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, max(c.now().Sub(w.Oldest).Seconds(), 0), w.Hook)
	}
	for _, h := range c.hooks {
		if !seen[h] {
			ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, 0, h)
			ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, 0, h)
		}
	}
}
