package tunnel

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a Forward's limits. A shadow's tunnel container has a memory
// limit of 256 MiB, and sluice-tunnel keeps Go's heap under 80% of it:
// DefaultMaxConns SSH channel windows of 2 MiB, what the connections can
// hold at the most (128 MiB), fit under that with room for the runtime
// (bench/RESULTS.md, "Forward tunnel under 2,000 streams").
const (
	DefaultMaxConns     = 64
	DefaultMaxStalled   = 32
	DefaultIdleTimeout  = time.Hour
	DefaultStallTimeout = 30 * time.Second
)

// stallAfter is how long a write to a client may block before its
// connection counts as stalled: the job's next bytes then wait in the SSH
// channel's window, in the tunnel's memory. A client that keeps up takes a
// write at once (into its socket buffers), so only one that has stopped
// reading, or reads slower than the job sends, ever waits this long.
const stallAfter = 250 * time.Millisecond

// limits are a Forward's bounds with their defaults applied; a negative
// count or duration means none.
type limits struct {
	maxConns     int
	maxStalled   int
	idleTimeout  time.Duration
	stallTimeout time.Duration
}

func (f *Forward) limits() limits {
	count := func(n, def int) int {
		if n == 0 {
			return def
		}
		return n
	}
	return limits{
		maxConns:     count(f.MaxConns, DefaultMaxConns),
		maxStalled:   count(f.MaxStalled, DefaultMaxStalled),
		idleTimeout:  orDefault(f.IdleTimeout, DefaultIdleTimeout),
		stallTimeout: orDefault(f.StallTimeout, DefaultStallTimeout),
	}
}

// slots counts what is held of a bounded number of things at once: the
// connections of a port, the stalled connections of a forward.
type slots struct {
	max  int64 // negative: no bound
	held atomic.Int64
}

func newSlots(max int) *slots { return &slots{max: int64(max)} }

// take takes a slot if one is free.
func (s *slots) take() bool {
	if s.max < 0 {
		s.held.Add(1)
		return true
	}
	if s.held.Add(1) > s.max {
		s.held.Add(-1)
		return false
	}
	return true
}

func (s *slots) release() { s.held.Add(-1) }

// burst tells which events of a kind to log when a client can make many of
// them (a flood of connections, thousands of clients that stop reading):
// the first of each burst, a burst ending after quiet without one, and one
// every burstRepeat while a burst lasts, so that a client that keeps one
// going does not silence the log after its first line. The metrics count
// every event.
type burst struct {
	quiet time.Duration

	mu       sync.Mutex
	last     time.Time // of the last event
	logged   time.Time // of the last event logged
	unlogged int       // events of this burst not logged
}

// burstQuiet is the time without an event that ends a burst; burstRepeat
// is how often a burst that does not end is logged again.
const (
	burstQuiet  = 10 * time.Second
	burstRepeat = time.Minute
)

// event records an event at now. It reports whether to log it and, if so,
// how many events before it were not logged.
func (b *burst) event(now time.Time) (log bool, unloggedBefore int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	log = b.last.IsZero() || now.Sub(b.last) >= b.quiet || now.Sub(b.logged) >= burstRepeat
	b.last = now
	if !log {
		b.unlogged++
		return false, 0
	}
	b.logged = now
	n := b.unlogged
	b.unlogged = 0
	return true, n
}

// bounds are what a Forward's connections share to keep within its limits.
type bounds struct {
	limits
	metrics  *Metrics
	conns    *slots            // connections carried
	stalled  *slots            // connections whose client does not keep up
	refusals *burst            // of clients beyond maxConns
	cuts     map[string]*burst // by reason (CutIdle, …); read-only
}

func newBounds(lim limits, m *Metrics) *bounds {
	b := &bounds{
		limits: lim, metrics: m, conns: newSlots(lim.maxConns), stalled: newSlots(lim.maxStalled),
		refusals: &burst{quiet: burstQuiet}, cuts: map[string]*burst{},
	}
	for _, reason := range []string{CutIdle, CutStalled, CutStallLimit} {
		b.cuts[reason] = &burst{quiet: burstQuiet}
	}
	return b
}

// cutLogged counts a connection closed by its guard for reason, and logs
// it if it is the first of a burst. args are the connection's own.
func (b *bounds) cutLogged(reason string, log *slog.Logger, args ...any) {
	b.metrics.Cut(reason)
	first, unlogged := b.cuts[reason].event(time.Now())
	if !first {
		return
	}
	args = append(args, "unlogged_before", unlogged)
	switch reason {
	case CutIdle:
		log.Info("idle forward connection closed", append(args, "idle_timeout", b.idleTimeout)...)
	case CutStalled:
		log.Warn("forward client not reading: connection closed", append(args, "stall_timeout", b.stallTimeout)...)
	case CutStallLimit:
		log.Warn("too many forward clients not reading: connection closed", append(args, "max_stalled", b.maxStalled)...)
	}
}
