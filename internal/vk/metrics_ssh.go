package vk

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-hpc/sluice/internal/site"
)

// sshCollector reports the SSH runner's connections and sessions when
// scraped (site.SSH.Stats).
type sshCollector struct{ ssh *site.SSH }

var (
	sshConnectsDesc = prometheus.NewDesc("sluice_vk_ssh_connections_total",
		"SSH connections made to the site's login node.", nil, nil)
	sshFailuresDesc = prometheus.NewDesc("sluice_vk_ssh_connect_failures_total",
		"SSH connection attempts to the login node that failed, by reason (host_key, auth, timeout, network, other).", []string{"reason"}, nil)
	sshSessionsDesc = prometheus.NewDesc("sluice_vk_ssh_sessions",
		"SSH sessions open on the login node connection now: commands, and SFTP.", nil, nil)
)

// sshFailureReasons are reported even at zero, so that a rate over them
// starts from the first scrape.
var sshFailureReasons = []string{site.FailHostKey, site.FailAuth, site.FailTimeout, site.FailNetwork, site.FailOther}

func (c sshCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sshConnectsDesc
	ch <- sshFailuresDesc
	ch <- sshSessionsDesc
}

func (c sshCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.ssh.Stats()
	ch <- prometheus.MustNewConstMetric(sshConnectsDesc, prometheus.CounterValue, float64(st.Connects))
	for _, r := range sshFailureReasons {
		ch <- prometheus.MustNewConstMetric(sshFailuresDesc, prometheus.CounterValue, float64(st.Failures[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(sshSessionsDesc, prometheus.GaugeValue, float64(st.Sessions))
}
