package vk

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-hpc/sluice/internal/sshx"
)

// certExpiry is a Prometheus collector of when the user certificate in
// file expires, read at each scrape: the certificate the next connection
// will offer, renewed or not. An unreadable certificate gives no sample
// (and the connection that needs it fails, saying why).
type certExpiry struct {
	file string
	desc *prometheus.Desc
}

var _ prometheus.Collector = certExpiry{}

func newCertExpiry(file string) certExpiry {
	return certExpiry{file: file, desc: prometheus.NewDesc(
		"sluice_vk_ssh_certificate_valid_before_seconds",
		"When the SSH user certificate (Network.SSH.CertificateFile) expires, in seconds since the epoch; +Inf if never.",
		nil, prometheus.Labels{"file": file})}
}

func (c certExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c certExpiry) Collect(ch chan<- prometheus.Metric) {
	cert, err := sshx.ReadCertificate(c.file)
	if err != nil {
		return
	}
	v := math.Inf(1)
	if end := sshx.CertValidBefore(cert); !end.IsZero() {
		v = float64(end.Unix())
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v)
}
