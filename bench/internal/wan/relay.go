package wan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Relay passes every connection it accepts to Target across a Link.
type Relay struct {
	Link
	// Target is the host:port dialled for each connection.
	Target string
	// Dial, if nil, dials TCP with a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log, if nil, logs nothing.
	Log *slog.Logger
}

// acceptPause is how long Serve waits after an accept failed for a reason
// that may pass (too many open files).
const acceptPause = 50 * time.Millisecond

// Serve accepts connections on ln until ctx ends or ln is closed, and
// passes each to Target; it closes ln, and every connection it passed, on
// return. Only a closed listener ends it before ctx does.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		switch {
		case ctx.Err() != nil:
			if c != nil {
				c.Close()
			}
			return nil
		case errors.Is(err, net.ErrClosed):
			return fmt.Errorf("wan relay: accept: %w", err)
		case err != nil:
			log.Warn("accept failed", "error", err)
			select {
			case <-time.After(acceptPause):
			case <-ctx.Done():
			}
			continue
		}
		wg.Go(func() {
			if err := r.pass(ctx, c); err != nil {
				log.Info("connection ended", "from", c.RemoteAddr().String(), "error", err)
			}
		})
	}
}

// pass carries one connection to Target. The client's TCP handshake was
// with this relay, at once: its data waits a round trip (2 × Delay)
// before it is read, what the handshake across the link would have cost
// it, so that a new connection pays what it would across a WAN (the
// target sees the connection one Delay early; nothing can hold back the
// kernel's SYN-ACK).
func (r *Relay) pass(ctx context.Context, c net.Conn) error {
	if r.Delay > 0 {
		t := time.NewTimer(2 * r.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			c.Close()
			return nil
		}
	}
	dial := r.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	up, err := dial(ctx, "tcp", r.Target)
	if err != nil {
		c.Close()
		return fmt.Errorf("wan relay: dial %s: %w", r.Target, err)
	}
	err = r.Link.Pipe(ctx, c, up)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
