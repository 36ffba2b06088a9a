package gateway

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// ErrBackoff is the error of a connection to the site not attempted: the
// attempts before it failed, and the next waits for its backoff.
var ErrBackoff = errors.New("waiting before the next attempt")

// retryGate spaces the attempts to reach one hop of the site (the login
// node, a compute node) after failures: every shadow asks the gateway for
// its node on its own schedule, and while the site is down (a login node
// restarting, MaxStartups reached) an attempt per shadow would be the
// reconnection storm the gateway is there to prevent. Between attempts the
// shadows are refused at once with the last failure. Guarded by Site.mu.
type retryGate struct {
	fails int
	until time.Time
	last  error
}

// check returns an error wrapping ErrBackoff while the gate is closed.
func (g *retryGate) check(now time.Time) error {
	if g == nil {
		return nil
	}
	if wait := g.until.Sub(now); wait > 0 {
		return fmt.Errorf("%w (%v more, after %d failed attempts): %w", ErrBackoff, wait.Round(time.Millisecond), g.fails, g.last)
	}
	return nil
}

// failed records a failed attempt and closes the gate for a time that
// doubles with each failure from lo up to hi (both positive), less up to
// half at random,
// so that gateway replicas do not retry in step.
func (g *retryGate) failed(now time.Time, err error, lo, hi time.Duration) time.Duration {
	g.fails++
	g.last = err
	d := lo
	for i := 1; i < g.fails && d < hi; i++ {
		if d > hi/2 {
			d = hi // doubling would pass it, or overflow
			break
		}
		d *= 2
	}
	d = min(d, hi)
	d -= rand.N(d/2 + 1)
	g.until = now.Add(d)
	return d
}

// gateOf returns the gate of node, nil if it has none (no failure since
// its last connection).
func (s *Site) gateOf(node string) *retryGate {
	return s.gates[node]
}

// loginFailed records a failed attempt to reach the login node.
func (s *Site) loginFailed(err error) {
	wait := s.loginGate.failed(time.Now(), err, s.backoffMin(), s.backoffMax())
	s.log().Warn("ssh connect failed: shadows are refused until the next attempt", "hop", "login",
		"attempts", s.loginGate.fails, "retry_in", wait.Round(time.Millisecond), "error", err)
}

// nodeFailed records a failed attempt to reach node.
func (s *Site) nodeFailed(node string, err error) {
	if s.gates == nil {
		s.gates = make(map[string]*retryGate)
	}
	g := s.gates[node]
	if g == nil {
		g = &retryGate{}
		s.gates[node] = g
	}
	wait := g.failed(time.Now(), err, s.backoffMin(), s.backoffMax())
	s.log().Warn("ssh connect failed: shadows are refused until the next attempt", "hop", "node", "node", node,
		"attempts", g.fails, "retry_in", wait.Round(time.Millisecond), "error", err)
}

func (s *Site) backoffMin() time.Duration { return orDefault(s.BackoffMin, 500*time.Millisecond) }
func (s *Site) backoffMax() time.Duration { return orDefault(s.BackoffMax, 30*time.Second) }
