package socks

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Backoff after a failed accept: it starts at minAcceptDelay and doubles up
// to maxAcceptDelay while accepts keep failing.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// Serve accepts connections on ln and serves each in its own goroutine
// with ServeConn, until ctx ends (Serve then closes ln) or ln is closed.
// It returns when all its connections have ended too, which ctx ending
// makes happen at once; the error is nil in both cases.
//
// A failed accept (too many open files, a connection aborted before it was
// accepted, …) does not end Serve: it waits a little, longer each time, and
// accepts again. Failures are logged to s.Log, each kind once and then
// every 1000th time.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var conns sync.WaitGroup
	defer conns.Wait()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			s.fails.record(s.logger(), failAccept, "listener", ln.Addr().String(), "error", err)
			delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		delay = 0
		conns.Go(func() { s.serveAccepted(ctx, c) })
	}
}

// serveAccepted serves c and logs why it failed, unless ctx ended.
func (s *Server) serveAccepted(ctx context.Context, c net.Conn) {
	client := c.RemoteAddr().String()
	err := s.ServeConn(ctx, c)
	var ce *ConnError
	if err == nil || ctx.Err() != nil || !errors.As(err, &ce) {
		return
	}
	s.fails.record(s.logger(), failureKind(ce.Stage), "client", client, "error", err)
}
