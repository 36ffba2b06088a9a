package tunnel

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
)

// connect makes the connections a client for node needs (the login node's,
// and with TargetNode the node's through it), records the outcome and
// closes done.
func (l *link) connect(node string, done chan struct{}) {
	defer close(done)
	l.mu.Lock()
	l.attempts++
	attempt := l.attempts
	login := l.login
	if login != nil && !login.alive() {
		login = nil
	}
	l.mu.Unlock()

	var nodeConn *sshConn
	var err error
	for reused := login != nil; ; reused = false {
		if login == nil {
			if login, err = l.dialLogin(attempt); err != nil {
				break
			}
		}
		if l.target != TargetNode {
			break
		}
		nodeConn, err = l.dialNode(login, node, attempt)
		if err == nil || !reused || !l.gone(login) {
			break
		}
		// The login connection broke unnoticed: make it again, once.
		l.drop(login, err)
		login = nil
	}
	if hostKeyErr := l.record(node, attempt, login, nodeConn, err); hostKeyErr && l.onKey != nil {
		l.onKey(err)
	}
}

func (l *link) dialLogin(attempt int) (*sshConn, error) {
	client, err := l.hop.Login(l.ctx)
	if err != nil {
		return nil, err
	}
	l.log.Info("ssh connected", "hop", "login", "addr", l.hop.LoginAddr, "attempt", attempt)
	return l.keep(&sshConn{client: client, hop: "login", dead: make(chan struct{})}), nil
}

func (l *link) dialNode(login *sshConn, node string, attempt int) (*sshConn, error) {
	client, err := l.hop.Node(l.ctx, login.client, node)
	if err != nil {
		return nil, err
	}
	l.log.Info("ssh connected", "hop", "node", "node", node, "attempt", attempt)
	return l.keep(&sshConn{client: client, hop: "node", node: node, dead: make(chan struct{})}), nil
}

// gone reports whether c no longer answers a keepalive.
func (l *link) gone(c *sshConn) bool {
	return !c.alive() || sshx.Ping(l.ctx, c.client, min(l.kaWait, 5*time.Second)) != nil
}

// record stores the outcome of an attempt; it reports whether err is a host
// key mismatch.
func (l *link) record(node string, attempt int, login, nodeConn *sshConn, err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dialing = nil
	if l.ctx.Err() != nil {
		// Run is over: nobody would close these.
		closeAll(login, nodeConn, l.login, l.node)
		l.login, l.node = nil, nil
		return false
	}
	if login != nil {
		l.login = login
	}
	if nodeConn != nil {
		if old := l.node; old != nil && old != nodeConn {
			old.stale = true
			if old.refs == 0 {
				old.close()
			}
		}
		l.node = nodeConn
	}
	if err == nil {
		l.lastErr, l.failures, l.retryAt, l.alarmed = nil, 0, time.Time{}, false
		l.metrics.SetUp(true)
		l.status.set(StateUp, node, nil)
		if l.lost {
			l.lost = false
			l.metrics.Reconnect()
		}
		return false
	}
	l.failures++
	l.lastErr = err
	l.status.failed(node, err)
	var keyErr *sshx.HostKeyError
	if !errors.As(err, &keyErr) {
		wait := l.backoff(l.failures)
		l.retryAt = time.Now().Add(wait)
		l.log.Warn("ssh connect failed", "node", node, "attempt", attempt, "failures", l.failures, "retry_in", wait, "error", err)
		return false
	}
	wait := l.backMax
	l.retryAt = time.Now().Add(wait)
	if !l.alarmed {
		l.alarmed = true
		l.log.Error("host key rejected: not connecting (a man-in-the-middle, or wrong pinned host keys)",
			"node", node, "host", keyErr.Host, "attempt", attempt, "retry_in", wait, "error", err)
	} else {
		l.log.Debug("host key rejected", "node", node, "attempt", attempt, "retry_in", wait)
	}
	return true
}

// keep starts the keepalive of c, which drops c when it fails.
func (l *link) keep(c *sshConn) *sshConn {
	l.wg.Go(func() {
		err := sshx.KeepAlive(l.ctx, c.client, l.kaEvery, l.kaWait)
		if l.ctx.Err() != nil {
			c.close()
			return
		}
		l.drop(c, err)
	})
	return c
}

func closeAll(conns ...*sshConn) {
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
}

// backoff is the wait after n failed attempts in a row (backoffAfter).
func (l *link) backoff(n int) time.Duration {
	return backoffAfter(n, l.backMin, l.backMax)
}

// backoffAfter is the wait after n failed attempts in a row: lo doubled n-1
// times, at most hi, then between half of that and all of it.
func backoffAfter(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + rand.N(d/2+1)
}
