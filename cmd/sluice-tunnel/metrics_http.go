package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluice-hpc/sluice/internal/tunnel"
)

// newRegistry returns a private registry holding the Go runtime and process
// collectors; the tunnel adds its own metrics.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// metricsHandler serves /metrics from reg, /status (the tunnel's state as
// JSON, tunnel.Snapshot, which the virtual kubelet turns into Events and a
// pod condition), /healthz, which answers 200 "ok" while the process runs
// (the liveness probe: a tunnel that is down, because the site is, is
// retried; restarting it would not help), and /readyz (the readiness
// probe, readyHandler).
func metricsHandler(reg *prometheus.Registry, status *tunnel.Status) http.Handler {
	mux := healthMux(reg)
	mux.Handle("GET /status", status)
	mux.Handle("GET /readyz", readyHandler(status.Snapshot))
	return mux
}

// healthMux serves /metrics from reg and /healthz, the part of
// metricsHandler the gateway serves too.
func healthMux(reg *prometheus.Registry) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	return mux
}

// readyHandler answers 200 "up" while the tunnel is up (state up in
// /status), 503 and the state otherwise: a Service sends connections to a
// forward tunnel only while it can carry them.
func readyHandler(snapshot func() tunnel.Snapshot) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		snap := snapshot()
		if snap.State == tunnel.StateUp {
			io.WriteString(w, "up\n")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		msg := string(snap.State)
		if snap.Error != "" {
			msg += ": " + snap.Error
		}
		io.WriteString(w, msg+"\n")
	})
}

// metricsServer serves metricsHandler on a listener bound at start-up, so
// that a taken address is an error before the tunnel starts.
type metricsServer struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
}

// listenMetrics binds addr for h, the metrics of the tunnel or the gateway.
func listenMetrics(addr string, h http.Handler, log *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &metricsServer{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		ln:  ln,
		log: log,
	}, nil
}

// Addr returns the address the server listens on.
func (m *metricsServer) Addr() net.Addr { return m.ln.Addr() }

// Run serves until ctx ends, then shuts the server down, giving requests in
// flight a few seconds. A failure to serve is logged, not fatal: the tunnel
// goes on without its metrics.
func (m *metricsServer) Run(ctx context.Context) {
	m.log.Info("metrics listening", "addr", m.ln.Addr().String())
	served := make(chan error, 1)
	go func() { served <- m.srv.Serve(m.ln) }()
	select {
	case err := <-served:
		m.log.Error("metrics server stopped", "error", err)
		return
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := m.srv.Shutdown(shutCtx); err != nil {
		m.srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		m.log.Warn("metrics server stopped", "error", err)
	}
}
