package kubeletstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// forwardSession is one port-forward connection (kubectl port-forward's,
// through the API server): virtual-kubelet gives its streams
// context.Background(), so they get ctx, which ends with the connection,
// from here; and it counts them against streamsPerSession.
type forwardSession struct {
	ctx context.Context

	mu      sync.Mutex
	streams int
}

// forwardInSession carries one stream of fs, refused (with a message the
// client reads on the stream's error stream) beyond streamsPerSession.
func (s *Server) forwardInSession(fs *forwardSession, namespace, pod string, port int32, stream io.ReadWriteCloser) error {
	fs.mu.Lock()
	full := fs.streams >= streamsPerSession
	if !full {
		fs.streams++
	}
	fs.mu.Unlock()
	if full {
		reset(stream)
		return fmt.Errorf("port-forward: %w port-forward streams in this session (at most %d at once)", errTooMany, streamsPerSession)
	}
	defer func() {
		fs.mu.Lock()
		fs.streams--
		fs.mu.Unlock()
	}()
	return s.PortForward(fs.ctx, namespace, pod, port, stream)
}

// reset ends a refused stream at once where the protocol can (SPDY): what
// the client still sends on it is then dropped by the connection instead of
// waiting for a reader, which would stall the connection's other streams.
func reset(stream io.ReadWriteCloser) {
	if r, ok := stream.(interface{ Reset() error }); ok {
		_ = r.Reset()
	}
}

// errIdle ends a port-forward stream that carried nothing for a while.
var errIdle = errors.New("the stream carried nothing either way")

// idleContext returns ctx ended, with errIdle as its cause, once r has
// carried nothing either way for d; stop ends the watch (and the context).
func idleContext(ctx context.Context, r *readAhead, d time.Duration) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &idleWatch{r: r, d: d, cancel: cancel}
	w.mu.Lock()
	w.t = time.AfterFunc(d, w.check)
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		w.t.Stop()
		w.mu.Unlock()
		cancel(nil)
	}
}

type idleWatch struct {
	r      *readAhead
	d      time.Duration
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	t      *time.Timer
}

// check ends the stream if it has been idle for d, or looks again when it
// would have been.
func (w *idleWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if left := w.d - time.Since(w.r.lastActive()); left > 0 {
		w.t.Reset(left)
		return
	}
	w.cancel(fmt.Errorf("%w for %v", errIdle, w.d))
}
