package provider

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// metrics are the provider's Prometheus metrics (S7). A nil *metrics
// records nothing.
type metrics struct {
	polls       prometheus.Counter
	pollErrors  prometheus.Counter
	pollSeconds prometheus.Histogram
	submitted   *prometheus.CounterVec
	submitWaits *prometheus.CounterVec
	refusals    *prometheus.CounterVec
	finished    *prometheus.CounterVec
	cancels     prometheus.Counter
}

// newMetrics registers the provider's metrics, and a collector of its pods
// by phase, on reg.
func newMetrics(reg prometheus.Registerer, p *Provider) (*metrics, error) {
	m := &metrics{
		polls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_vk_polls_total", Help: "Status polls of all the node's jobs (one squeue each).",
		}),
		pollErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_vk_poll_errors_total", Help: "Status polls that failed.",
		}),
		pollSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sluice_vk_poll_duration_seconds", Help: "Time one status poll of all jobs took.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}),
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_vk_jobs_submitted_total", Help: "Pods turned into Slurm jobs, by how (submitted or adopted).",
		}, []string{"how"}),
		submitWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_vk_submit_waits_total", Help: "Submission attempts that must wait and retry, by reason.",
		}, []string{"reason"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_vk_refusals_total", Help: "Pods refused at creation (S6), by reason.",
		}, []string{"reason"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_vk_jobs_finished_total", Help: "Jobs that ended, by the pod phase they gave.",
		}, []string{"phase"}),
		cancels: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_vk_jobs_cancelled_total", Help: "Jobs cancelled because their pod was deleted.",
		}),
	}
	for _, c := range []prometheus.Collector{m.polls, m.pollErrors, m.pollSeconds, m.submitted, m.submitWaits, m.refusals, m.finished, m.cancels, podCollector{p}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) poll(took time.Duration, err error) {
	if m == nil {
		return
	}
	m.polls.Inc()
	m.pollSeconds.Observe(took.Seconds())
	if err != nil {
		m.pollErrors.Inc()
	}
}

func (m *metrics) submit(adopted bool) {
	if m == nil {
		return
	}
	how := "submitted"
	if adopted {
		how = "adopted"
	}
	m.submitted.WithLabelValues(how).Inc()
}

func (m *metrics) wait(reason string) {
	if m != nil {
		m.submitWaits.WithLabelValues(reason).Inc()
	}
}

func (m *metrics) refused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

func (m *metrics) finish(phase corev1.PodPhase) {
	if m != nil {
		m.finished.WithLabelValues(string(phase)).Inc()
	}
}

func (m *metrics) cancelled() {
	if m != nil {
		m.cancels.Inc()
	}
}

// podCollector reports the pods the provider holds, by phase, when scraped.
type podCollector struct{ p *Provider }

var podsDesc = prometheus.NewDesc("sluice_vk_pods", "Pods on the virtual node, by phase.", []string{"phase"}, nil)

func (c podCollector) Describe(ch chan<- *prometheus.Desc) { ch <- podsDesc }

func (c podCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[corev1.PodPhase]int{
		corev1.PodPending: 0, corev1.PodRunning: 0, corev1.PodSucceeded: 0, corev1.PodFailed: 0, corev1.PodUnknown: 0,
	}
	c.p.mu.Lock()
	for _, st := range c.p.pods {
		counts[st.pod.Status.Phase]++
	}
	c.p.mu.Unlock()
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(n), string(phase))
	}
}

// RegisterMetrics registers the provider's metrics on reg with no provider
// behind them: what a sluice-vk serves, for the checks that the chart's
// dashboard and alerts name only metrics that exist.
func RegisterMetrics(reg prometheus.Registerer) error {
	_, err := newMetrics(reg, &Provider{})
	return err
}
