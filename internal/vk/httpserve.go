package vk

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// serveUntil runs serve (srv's Serve or ServeTLS) until it fails or ctx
// ends; then it shuts srv down, giving its requests 5 seconds before it
// closes them. A server that stopped because ctx ended returns nil.
func serveUntil(ctx context.Context, srv *http.Server, serve func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = srv.Close()
		}
		if e := <-errc; err == nil && !errors.Is(e, http.ErrServerClosed) {
			err = e
		}
		return err
	}
}
