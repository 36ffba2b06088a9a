package tunnel

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-hpc/sluice/internal/pipe"
)

var (
	// errStalled is the error of a connection whose client took none of the
	// job's bytes within the stall timeout.
	errStalled = errors.New("client not reading")
	// errStallLimit is the error of a connection whose client stopped
	// reading while the forward already held its most stalled connections.
	errStallLimit = errors.New("client not reading, and the most stalled connections are held")
)

// guard bounds one carried connection. The SSH channel takes up to its
// window (2 MiB) of the job's bytes whether or not the client reads them,
// and they wait in the tunnel's memory: so a connection whose client does
// not take a write within stallAfter holds one of the forward's stalled
// slots until its channel is drained, is closed at once when none is free,
// and is closed when a write waits longer than the stall timeout. A
// connection that carries nothing either way for the idle timeout is closed
// too.
//
// The guard sits between pipe.Relay and the two connections (clientSide,
// remoteSide), so that the relay's copies, half-closes and errors stay as
// they are.
type guard struct {
	lim     limits
	stalled *slots // the forward's
	metrics *Metrics
	client  net.Conn
	remote  net.Conn

	last atomic.Int64           // when a byte was last carried either way, in Unix nanoseconds
	cut  atomic.Pointer[string] // why the guard closed the connection; nil if it did not

	mu      sync.Mutex
	idle    *time.Timer // nil without an idle timeout
	stopped bool        // the relay has returned: the timer must not be armed again

	// holds is set while the connection holds a stalled slot: by the copy
	// from the remote to the client, and cleared by it, by the timer of a
	// read that waits (read), or by stop.
	holds atomic.Bool
}

func newGuard(client, remote net.Conn, lim limits, stalled *slots, m *Metrics) *guard {
	g := &guard{lim: lim, stalled: stalled, metrics: m, client: client, remote: remote}
	g.last.Store(time.Now().UnixNano())
	if lim.idleTimeout > 0 {
		g.mu.Lock()
		g.idle = time.AfterFunc(lim.idleTimeout, g.checkIdle)
		g.mu.Unlock()
	}
	return g
}

// clientSide and remoteSide are the connections as the relay sees them.
func (g *guard) clientSide() net.Conn { return clientSide{Conn: g.client, g: g} }
func (g *guard) remoteSide() net.Conn { return remoteSide{Conn: g.remote, g: g} }

// stop ends the guard once the relay has returned.
func (g *guard) stop() {
	g.mu.Lock()
	g.stopped = true
	if g.idle != nil {
		g.idle.Stop()
	}
	g.mu.Unlock()
	g.unstall()
}

// reason is why the guard closed the connection (CutIdle, …), "" if it did
// not.
func (g *guard) reason() string {
	if r := g.cut.Load(); r != nil {
		return *r
	}
	return ""
}

// cutBy records reason as why the connection ends, unless one is recorded
// already, and returns err.
func (g *guard) cutBy(reason string, err error) error {
	g.cut.CompareAndSwap(nil, &reason)
	return err
}

func (g *guard) carried(n int) {
	if n > 0 {
		g.last.Store(time.Now().UnixNano())
	}
}

// checkIdle closes the connection if it carried nothing for the idle
// timeout, and otherwise looks again when it could have.
func (g *guard) checkIdle() {
	quiet := time.Since(time.Unix(0, g.last.Load()))
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return
	}
	if quiet < g.lim.idleTimeout {
		g.idle.Reset(g.lim.idleTimeout - quiet)
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	g.cutBy(CutIdle, nil)
	g.client.Close()
	g.remote.Close()
}

// write writes p to the client, within the bounds on a client that does
// not read.
func (g *guard) write(p []byte) (int, error) {
	if g.lim.maxStalled < 0 && g.lim.stallTimeout < 0 {
		n, err := g.client.Write(p)
		g.carried(n)
		return n, err
	}
	start := time.Now()
	var done int
	if !g.holds.Load() {
		first := stallAfter
		if g.lim.stallTimeout >= 0 {
			first = min(first, g.lim.stallTimeout)
		}
		g.client.SetWriteDeadline(start.Add(first))
		n, err := g.client.Write(p)
		g.carried(n)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		// The job's next bytes now wait in the channel's window.
		if !g.stalled.take() {
			return n, g.cutBy(CutStallLimit, errStallLimit)
		}
		g.holds.Store(true)
		g.metrics.Stalled(1)
		done, p = n, p[n:]
	}
	var deadline time.Time
	if g.lim.stallTimeout >= 0 {
		deadline = start.Add(g.lim.stallTimeout)
	}
	g.client.SetWriteDeadline(deadline)
	n, err := g.client.Write(p)
	g.carried(n)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = g.cutBy(CutStalled, fmt.Errorf("%w for %v", errStalled, g.lim.stallTimeout))
	}
	return done + n, err
}

// read reads the job's bytes from the remote. A read that does not fill p
// emptied the channel's buffer, and so did one that waits: a stalled
// connection then holds nothing of the job's, and gives its slot back.
func (g *guard) read(p []byte) (int, error) {
	if g.holds.Load() {
		// A job that stopped sending leaves nothing waiting, even if its
		// last packet filled the last read.
		waits := time.AfterFunc(stallAfter, g.unstall)
		defer waits.Stop()
	}
	n, err := g.remote.Read(p)
	g.carried(n)
	if n < len(p) {
		g.unstall()
	}
	return n, err
}

func (g *guard) unstall() {
	if g.holds.CompareAndSwap(true, false) {
		g.stalled.release()
		g.metrics.Stalled(-1)
	}
}

// clientSide is the client's connection under a guard.
type clientSide struct {
	net.Conn
	g *guard
}

func (c clientSide) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.g.carried(n)
	return n, err
}

func (c clientSide) Write(p []byte) (int, error) { return c.g.write(p) }
func (c clientSide) CloseWrite() error           { return pipe.CloseWrite(c.Conn) }

// remoteSide is the channel to the job under a guard.
type remoteSide struct {
	net.Conn
	g *guard
}

func (r remoteSide) Read(p []byte) (int, error) { return r.g.read(p) }

func (r remoteSide) Write(p []byte) (int, error) {
	n, err := r.Conn.Write(p)
	r.g.carried(n)
	return n, err
}

func (r remoteSide) CloseWrite() error { return pipe.CloseWrite(r.Conn) }
