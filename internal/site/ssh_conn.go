package site

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// sshConn is one connection to the login node and its SFTP client.
type sshConn struct {
	client   *ssh.Client
	attempt  int           // the dial that made it
	dead     chan struct{} // closed once the connection is dropped
	deadOnce sync.Once

	open *atomic.Int64 // the runner's open sessions

	sftpMu sync.Mutex
	sftp   *sftp.Client // made on first use; nil again if its session ends
}

func (c *sshConn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// close marks c dead and closes it; it reports whether this call did.
func (c *sshConn) close() bool {
	first := false
	c.deadOnce.Do(func() {
		first = true
		close(c.dead)
		c.sftpMu.Lock()
		if c.sftp != nil {
			c.sftp.Close()
		}
		c.sftpMu.Unlock()
		c.client.Close()
	})
	return first
}

// sftpClient returns the connection's SFTP client, starting it if needed.
func (c *sshConn) sftpClient() (*sftp.Client, error) {
	c.sftpMu.Lock()
	defer c.sftpMu.Unlock()
	if c.sftp != nil {
		return c.sftp, nil
	}
	if c.isDead() {
		return nil, ErrConnLost
	}
	cl, err := sftp.NewClient(c.client)
	if err != nil {
		return nil, fmt.Errorf("start sftp: %w", err)
	}
	c.sftp = cl
	c.open.Add(1)
	go func() {
		defer c.open.Add(-1)
		// The SFTP session can end on its own (sftp-server died); the next
		// file operation then starts a new one.
		cl.Wait()
		c.sftpMu.Lock()
		if c.sftp == cl {
			c.sftp = nil
		}
		c.sftpMu.Unlock()
	}()
	return cl, nil
}

// conn returns the live connection, dialing if there is none. Callers that
// arrive during a dial wait for it; a caller that arrives while the runner
// backs off after failed dials gets the last failure at once.
func (s *SSH) conn(ctx context.Context) (*sshConn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if c := s.cur; c != nil && !c.isDead() {
		s.mu.Unlock()
		return c, nil
	}
	if s.dialing == nil {
		if wait := time.Until(s.retryAt); wait > 0 {
			err := s.lastErr
			s.mu.Unlock()
			return nil, fmt.Errorf("connect %s: next attempt in %v: %w", s.cfg.Addr, wait.Round(time.Millisecond), err)
		}
		s.dialing = make(chan struct{})
		s.wg.Add(1)
		go s.dial(s.dialing)
	}
	dialing := s.dialing
	s.mu.Unlock()

	select {
	case <-dialing:
	case <-ctx.Done():
		return nil, fmt.Errorf("connect %s: %w", s.cfg.Addr, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch c := s.cur; {
	case s.closed:
		return nil, ErrClosed
	case c != nil && !c.isDead():
		return c, nil
	case s.lastErr != nil:
		return nil, fmt.Errorf("connect %s: %w", s.cfg.Addr, s.lastErr)
	default:
		return nil, fmt.Errorf("connect %s: %w right after connecting", s.cfg.Addr, ErrConnLost)
	}
}

// dial makes a connection and records the outcome; it closes done when it
// has.
func (s *SSH) dial(done chan struct{}) {
	defer s.wg.Done()
	defer close(done)
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
	client, err := sshx.Dial(ctx, s.cfg.Dial, s.cfg.Addr, s.client)
	cancel()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialing = nil
	s.dials++
	if err == nil && s.closed {
		client.Close()
		err = ErrClosed
	}
	if err != nil {
		s.failures++
		s.lastErr = err
		if s.failed == nil {
			s.failed = map[string]uint64{}
		}
		s.failed[failure(err)]++
		wait := s.backoff(s.failures)
		s.retryAt = time.Now().Add(wait)
		s.log.Debug("ssh connect failed", "attempt", s.dials, "failures", s.failures, "retry_in", wait)
		return
	}
	s.connects++
	c := &sshConn{client: client, attempt: s.dials, dead: make(chan struct{}), open: &s.open}
	s.cur, s.lastErr, s.failures, s.retryAt = c, nil, 0, time.Time{}
	s.log.Info("ssh connected", "attempt", s.dials)
	s.wg.Add(1)
	go s.keepAlive(c)
}

// backoff is the wait after n failed dials in a row: BackoffMin doubled
// n-1 times, at most BackoffMax, then between half of that and all of it.
func (s *SSH) backoff(n int) time.Duration {
	d := s.cfg.BackoffMin
	for i := 1; i < n && d < s.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.cfg.BackoffMax)
	return d/2 + rand.N(d/2+1)
}

// keepAlive pings c until it fails or the runner closes, then drops c.
func (s *SSH) keepAlive(c *sshConn) {
	defer s.wg.Done()
	err := sshx.KeepAlive(s.ctx, c.client, s.cfg.KeepAliveInterval, s.cfg.KeepAliveTimeout)
	if s.ctx.Err() == nil {
		s.drop(c, err)
	}
}

// drop closes c and forgets it, so that the next call dials again.
func (s *SSH) drop(c *sshConn, reason error) {
	s.mu.Lock()
	if s.cur == c {
		s.cur = nil
	}
	s.mu.Unlock()
	if c.close() {
		s.log.Warn("ssh connection lost", "attempt", c.attempt, "error", reason)
	}
}

// lost reports whether c is gone, checking with a keepalive when it is not
// known to be; a connection found gone is dropped.
func (s *SSH) lost(ctx context.Context, c *sshConn) bool {
	if c.isDead() {
		return true
	}
	err := sshx.Ping(ctx, c.client, s.cfg.KeepAliveTimeout)
	if err == nil || ctx.Err() != nil {
		return false
	}
	s.drop(c, err)
	return true
}
