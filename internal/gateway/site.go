package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// Site holds the gateway's SSH connections to the site: one to the login
// node, and through it one to each compute node some shadow needs, made on
// demand and closed once no shadow has needed it for Idle.
type Site struct {
	// Hop reaches the login node and the compute nodes' sshds, with their
	// host keys pinned (key, certificate, Kerberos, bastion and pacing as
	// sluice-vk's). Required.
	Hop *tunnel.Hop
	// Idle is how long a node connection no shadow uses is kept. If zero,
	// 30s.
	Idle time.Duration
	// KeepAliveInterval and KeepAliveTimeout pace the keepalives of every
	// connection. If zero, 15s and 15s.
	KeepAliveInterval, KeepAliveTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait after a failed attempt to
	// reach the login node or a compute node, during which the shadows
	// needing it are refused at once (retryGate). If zero, 500ms and 30s.
	BackoffMin, BackoffMax time.Duration
	// Log receives the connections' events. If nil, slog.Default().
	Log *slog.Logger

	mu        sync.Mutex
	login     *siteConn
	nodes     map[string]*siteConn  // by node name
	loginGate retryGate             // the login node's attempts
	gates     map[string]*retryGate // each compute node's, while failing
}

// siteConn is one SSH connection to the site.
type siteConn struct {
	client *ssh.Client
	node   string // "" for the login node's
	dead   chan struct{}
	once   sync.Once
	reason error

	refs int         // shadow connections using it; under Site.mu
	idle *time.Timer // closes it once unused; under Site.mu
}

func (c *siteConn) close(reason error) {
	c.once.Do(func() {
		c.reason = reason
		close(c.dead)
		c.client.Close()
	})
}

func (c *siteConn) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// A nodeLease is a shadow connection's use of a node connection; Release
// ends it.
type nodeLease struct {
	site *Site
	conn *siteConn
	once sync.Once
}

// Release gives the node connection back; it is closed after Site.Idle if
// no one else uses it.
func (l *nodeLease) Release() {
	l.once.Do(func() { l.site.release(l.conn) })
}

// Node returns a lease on the connection to node, making it (and the login
// connection) if there is none alive. Connections are made under the
// site's lock: shadows asking at once for a node not yet reached wait for
// one connection rather than each making its own.
func (s *Site) Node(ctx context.Context, node string) (*nodeLease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.nodes[node]; c != nil && c.alive() {
		s.use(c)
		return &nodeLease{site: s, conn: c}, nil
	}
	login, err := s.loginLocked(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.gateOf(node).check(time.Now()); err != nil {
		return nil, fmt.Errorf("connect to node %s: %w", node, err)
	}
	client, err := s.Hop.Node(ctx, login.client, node)
	if err != nil {
		if ctx.Err() == nil { // the site's failure, not the shadow gone
			s.nodeFailed(node, err)
		}
		return nil, fmt.Errorf("connect to node %s: %w", node, err)
	}
	delete(s.gates, node)
	c := &siteConn{client: client, node: node, dead: make(chan struct{})}
	if s.nodes == nil {
		s.nodes = make(map[string]*siteConn)
	}
	s.nodes[node] = c
	s.log().Info("ssh connected", "hop", "node", "node", node)
	s.watch(c, login)
	s.use(c)
	return &nodeLease{site: s, conn: c}, nil
}

// loginLocked returns the login connection, made again if it is gone.
func (s *Site) loginLocked(ctx context.Context) (*siteConn, error) {
	if s.login != nil && s.login.alive() {
		return s.login, nil
	}
	if err := s.loginGate.check(time.Now()); err != nil {
		return nil, fmt.Errorf("connect to the login node: %w", err)
	}
	client, err := s.Hop.Login(ctx)
	if err != nil {
		if ctx.Err() == nil { // the site's failure, not the shadow gone
			s.loginFailed(err)
		}
		return nil, fmt.Errorf("connect to the login node: %w", err)
	}
	s.loginGate = retryGate{}
	s.login = &siteConn{client: client, dead: make(chan struct{})}
	s.log().Info("ssh connected", "hop", "login", "addr", s.Hop.LoginAddr)
	s.watch(s.login, nil)
	return s.login, nil
}

// watch keeps c alive with keepalives and closes it when they fail, when
// the connection ends or when via (the login connection it runs through)
// does.
func (s *Site) watch(c *siteConn, via *siteConn) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		err := sshx.KeepAlive(ctx, c.client, orDefault(s.KeepAliveInterval, 15*time.Second), orDefault(s.KeepAliveTimeout, 15*time.Second))
		c.close(err)
	}()
	go func() {
		var viaDead <-chan struct{}
		if via != nil {
			viaDead = via.dead
		}
		select {
		case <-c.dead:
		case <-viaDead:
			c.close(errors.New("the login connection was lost"))
		}
		cancel()
		if c.reason != nil && !errors.Is(c.reason, errClosedIdle) && !errors.Is(c.reason, errStopping) {
			s.log().Warn("ssh connection lost", "hop", c.hop(), "node", c.node, "error", c.reason)
		}
	}()
}

func (c *siteConn) hop() string {
	if c.node == "" {
		return "login"
	}
	return "node"
}

func (s *Site) use(c *siteConn) {
	c.refs++
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
}

// The reasons the gateway closes a connection itself, which are no loss.
var (
	errClosedIdle = errors.New("idle")
	errStopping   = errors.New("gateway stopping")
)

func (s *Site) release(c *siteConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.refs--
	if c.refs > 0 {
		return
	}
	c.idle = time.AfterFunc(orDefault(s.Idle, 30*time.Second), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c.refs > 0 {
			return
		}
		if s.nodes[c.node] == c {
			delete(s.nodes, c.node)
		}
		s.log().Info("ssh connection closed: no shadow uses it", "hop", "node", "node", c.node)
		c.close(errClosedIdle)
	})
}

// Close closes every connection.
func (s *Site) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.nodes {
		if c.idle != nil {
			c.idle.Stop()
		}
		c.close(errStopping)
	}
	s.nodes = nil
	if s.login != nil {
		s.login.close(errStopping)
		s.login = nil
	}
}

func (s *Site) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// orDefault is v, or def if v is not positive.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
