package vk

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ServeHealth serves h on ln until ctx ends: /healthz (Live) and /readyz
// (Ready) answer 200 "ok", or 503 with the reasons, one a line. It is
// plain HTTP without authentication: it says nothing a probe of the pod
// could not.
func ServeHealth(ctx context.Context, ln net.Listener, h *Health, log *slog.Logger) error {
	srv := &http.Server{Handler: healthHandler(h, log), ReadHeaderTimeout: 10 * time.Second}
	if err := serveUntil(ctx, srv, func() error { return srv.Serve(ln) }); err != nil {
		return fmt.Errorf("health server: %w", err)
	}
	return nil
}

func healthHandler(h *Health, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	probe := func(name string, judge func() error) {
		mux.HandleFunc("GET /"+name, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if err := judge(); err != nil {
				log.Warn("sluice-vk: "+name+" failed", "error", err)
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, err)
				return
			}
			fmt.Fprintln(w, "ok")
		})
	}
	probe("healthz", h.Live)
	probe("readyz", h.Ready)
	return mux
}
