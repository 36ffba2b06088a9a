package vk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/version"
)

// metricsServer serves the virtual kubelet's Prometheus metrics over plain
// HTTP at /metrics (S7).
type metricsServer struct {
	reg *prometheus.Registry
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
}

// newMetricsServer listens on addr and makes the registry the provider and
// the node register on, with the Go runtime and process collectors.
func newMetricsServer(addr string, log *slog.Logger) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return &metricsServer{reg: reg, ln: ln, log: log,
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// buildInfo is the gauge sluice_vk_build_info, 1, labelled with the
// version --version prints and the Go version it was built with.
func buildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sluice_vk_build_info",
		Help: "Always 1; the labels say which sluice-vk runs.",
		ConstLabels: prometheus.Labels{
			"version":    version.String(),
			"go_version": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}

// registerNode adds the site reachability gauge of status.
func (m *metricsServer) registerNode(status *provider.NodeStatus) error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_vk_site_reachable", Help: "1 while the site's login node answers, else 0.",
	}, func() float64 {
		if status.Reachable() {
			return 1
		}
		return 0
	})
	return m.reg.Register(g)
}

// registerLeader adds the leader election's gauges: whether this replica
// leads, and how often it saw the leader change.
func (m *metricsServer) registerLeader(h *Health) error {
	if h == nil {
		return nil
	}
	leading := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_vk_leader", Help: "1 while this replica holds the node's Lease and runs the node, else 0.",
	}, func() float64 {
		if h.Leading() {
			return 1
		}
		return 0
	})
	changes := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "sluice_vk_leader_changes_total", Help: "Times this replica saw another replica take the node's Lease.",
	}, func() float64 { return float64(h.LeaderChanges()) })
	for _, c := range []prometheus.Collector{leading, changes} {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// registerCertificate adds the expiry of the SSH user certificate in file.
func (m *metricsServer) registerCertificate(file string) error {
	return m.reg.Register(newCertExpiry(file))
}

// serve serves until ctx ends; a failure is logged, not fatal: the node
// runs on without its metrics.
func (m *metricsServer) serve(ctx context.Context) {
	m.log.Info("sluice-vk: metrics served", "addr", m.ln.Addr().String())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = m.srv.Shutdown(sctx)
	}()
	if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		m.log.Error("sluice-vk: metrics server stopped", "error", err)
	}
}
