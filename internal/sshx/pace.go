package sshx

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Paced returns a DialFunc that takes a token from lim before each dial of
// dial, waiting for one when the bucket is empty: all the dials that share
// lim are spread out to its rate, with at most its burst at once. A nil lim
// paces nothing.
func Paced(dial DialFunc, lim *rate.Limiter) DialFunc {
	if lim == nil {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := lim.Wait(ctx); err != nil {
			return nil, fmt.Errorf("pace connection to %s: %w", addr, err)
		}
		return dial(ctx, network, addr)
	}
}

// Jitter spreads out the reconnections of many processes that lost their
// connections at the same moment (a login node restart): each waits, before
// every connection but its first, a random time between zero and Window(),
// so that they arrive spread over the window rather than together. The zero
// value, or a Window that returns zero or less, waits for nothing.
type Jitter struct {
	// Window is the window to spread over, asked before each wait. If nil,
	// no wait.
	Window func() time.Duration

	calls atomic.Int64
}

// Wait waits before a connection: not at all the first time, then a random
// time within Window(), or until ctx ends.
func (j *Jitter) Wait(ctx context.Context) error {
	if j == nil || j.calls.Add(1) == 1 || j.Window == nil {
		return nil
	}
	w := j.Window()
	if w <= 0 {
		return nil
	}
	t := time.NewTimer(rand.N(w))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reconnect jitter: %w", context.Cause(ctx))
	}
}

// SpreadWindow is the window the reconnections of n processes are jittered
// over: per for each of them, at most limit (no limit if zero or less). n below 1
// counts as 1; per of zero or less gives no window.
func SpreadWindow(n int, per, limit time.Duration) time.Duration {
	if per <= 0 {
		return 0
	}
	n = max(n, 1)
	if limit <= 0 {
		limit = math.MaxInt64
	}
	if time.Duration(n) > limit/per {
		return limit
	}
	return time.Duration(n) * per
}
