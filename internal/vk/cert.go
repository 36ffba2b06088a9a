package vk

import (
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/provider"
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

// usesCertificate reports whether the connection to the site is sluice-vk's
// own SSH connection, which offers Network.SSH.CertificateFile.
func usesCertificate(cfg *config.Config, opts Options) bool {
	return cfg.Site.Access == config.AccessSSH && opts.Runner == nil
}

// certificateCheck is the node's SSHCertificateValid check of the user
// certificate in file: not valid when it cannot be read or used now,
// expiring soon within warn of its end.
func certificateCheck(file string, warn time.Duration) provider.CertificateCheck {
	return func(now time.Time) (bool, string, string) {
		cert, err := sshx.ReadCertificate(file)
		if err == nil {
			err = sshx.CheckCertValidity(file, cert, now)
		}
		if err != nil {
			return false, provider.ReasonCertificateNotValid, err.Error()
		}
		end := sshx.CertValidBefore(cert)
		if !end.IsZero() && end.Sub(now) < warn {
			return true, provider.ReasonCertificateExpiresSoon, fmt.Sprintf(
				"ssh certificate %s expires at %s, in %s: renew it", file, end.UTC().Format(time.RFC3339), end.Sub(now).Round(time.Second))
		}
		msg := "ssh certificate " + file + " is valid"
		if !end.IsZero() {
			msg += " until " + end.UTC().Format(time.RFC3339)
		}
		return true, provider.ReasonCertificateValid, msg
	}
}
