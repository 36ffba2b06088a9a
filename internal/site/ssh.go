package site

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// SSHConfig configures an SSH runner. Addr, User, Auth and HostKeyCallback
// are required; every other field has a default.
type SSHConfig struct {
	// Addr is the login node's address, host:port.
	Addr string
	// User is the site account.
	User string
	// Auth lists the ways to authenticate, as in ssh.ClientConfig.
	Auth []ssh.AuthMethod
	// HostKeyCallback checks the login node's host key (see sshx.HostKeys).
	// It is required: there is no default that accepts an unseen key.
	HostKeyCallback ssh.HostKeyCallback
	// HostKeyAlgorithms are the host key algorithms to accept. If nil, those
	// of the keys HostKeyCallback pins for Addr (sshx.HostKeyAlgorithms), or
	// the ssh package's defaults when it pins none.
	HostKeyAlgorithms []string

	// Dial opens the network connection to Addr. If nil, a net.Dialer.
	Dial sshx.DialFunc
	// DialTimeout bounds connecting and the SSH handshake. If zero, 20s.
	DialTimeout time.Duration
	// KeepAliveInterval is the time between keepalives. If zero, 15s.
	KeepAliveInterval time.Duration
	// KeepAliveTimeout is how long a keepalive may go unanswered before the
	// connection is dropped. If zero, 15s.
	KeepAliveTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait after a failed connection
	// attempt: it starts at BackoffMin and doubles, with jitter, up to
	// BackoffMax. If zero, 500ms and 1m.
	BackoffMin, BackoffMax time.Duration
	// MaxSessions is how many sessions the runner opens at once on its
	// connection: commands plus one for SFTP. It must not exceed the
	// server's MaxSessions. If zero, 10 (OpenSSH's default).
	MaxSessions int
	// ReadTimeout bounds one ReadAt: the command that reads the file is
	// killed, and its session closed, when it passes. If zero, 30s.
	ReadTimeout time.Duration
	// MaxStdout is the most standard output Run keeps; a command that
	// writes more is stopped with ErrOutputLimit. If zero, 64 MiB.
	MaxStdout int
	// Logger receives connection events. If nil, slog.Default().
	Logger *slog.Logger
}

// SSH runs commands and moves files on the login node over one SSH
// connection, made on first use and kept alive with keepalives. Commands run
// at once as separate sessions on it, and file operations use SFTP over it.
// When the connection breaks it is made again, with backoff, on the next
// call. Create it with NewSSH.
type SSH struct {
	cfg      SSHConfig
	client   *ssh.ClientConfig
	log      *slog.Logger
	sessions chan struct{} // a token per command session that may be open

	ctx    context.Context // ends on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // dials, keepalive loops, file operations

	mu       sync.Mutex
	cur      *sshConn          // the connection in use; nil if none
	dialing  chan struct{}     // closed when the dial in progress ends; nil if none
	lastErr  error             // why the last dial failed
	failures int               // dials failed in a row
	retryAt  time.Time         // no dial before this, after failures
	dials    int               // connection attempts so far
	connects uint64            // connections made
	failed   map[string]uint64 // failed dials by reason
	closed   bool

	open     atomic.Int64 // sessions open: commands and SFTP
	activity Activity     // commands in flight
}

var _ Runner = (*SSH)(nil)

// NewSSH checks cfg, fills in its defaults and returns a runner. It does not
// connect: the first call does.
func NewSSH(cfg SSHConfig) (*SSH, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, fmt.Errorf("ssh config: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &SSH{
		cfg: cfg,
		client: &ssh.ClientConfig{
			User:              cfg.User,
			Auth:              cfg.Auth,
			HostKeyCallback:   cfg.HostKeyCallback,
			HostKeyAlgorithms: cfg.HostKeyAlgorithms,
		},
		log:      cfg.Logger.With("addr", cfg.Addr, "user", cfg.User),
		sessions: make(chan struct{}, cfg.MaxSessions-1),
		ctx:      ctx,
		cancel:   cancel,
	}, nil
}

func (c *SSHConfig) setDefaults() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("Addr: %w", err)
	}
	switch {
	case c.User == "":
		return errors.New("User: missing")
	case len(c.Auth) == 0:
		return errors.New("Auth: no method")
	case c.HostKeyCallback == nil:
		return errors.New("HostKeyCallback: missing: host keys must be pinned")
	case c.DialTimeout < 0, c.KeepAliveInterval < 0, c.KeepAliveTimeout < 0, c.ReadTimeout < 0, c.BackoffMin < 0, c.BackoffMax < 0:
		return errors.New("durations must not be negative")
	case c.MaxSessions == 1 || c.MaxSessions < 0:
		return fmt.Errorf("MaxSessions: %d: want at least 2 (one for SFTP, one for commands)", c.MaxSessions)
	case c.MaxStdout < 0:
		return fmt.Errorf("MaxStdout: %d is negative", c.MaxStdout)
	}
	if c.HostKeyAlgorithms == nil {
		c.HostKeyAlgorithms = sshx.HostKeyAlgorithms(c.HostKeyCallback, c.Addr)
	}
	if c.Dial == nil {
		c.Dial = (&net.Dialer{}).DialContext
	}
	setDuration(&c.DialTimeout, 20*time.Second)
	setDuration(&c.KeepAliveInterval, 15*time.Second)
	setDuration(&c.KeepAliveTimeout, 15*time.Second)
	setDuration(&c.ReadTimeout, 30*time.Second)
	setDuration(&c.BackoffMin, 500*time.Millisecond)
	setDuration(&c.BackoffMax, time.Minute)
	if c.BackoffMax < c.BackoffMin {
		return fmt.Errorf("BackoffMax %v is below BackoffMin %v", c.BackoffMax, c.BackoffMin)
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = 10
	}
	c.MaxStdout = limitOr(c.MaxStdout)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

func setDuration(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// Healthy checks the connection with one keepalive round trip, connecting
// first if needed.
func (s *SSH) Healthy(ctx context.Context) error {
	c, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("ssh health: %w", err)
	}
	if err := sshx.Ping(ctx, c.client, s.cfg.KeepAliveTimeout); err != nil {
		if ctx.Err() == nil {
			s.drop(c, err)
		}
		return fmt.Errorf("ssh health: %w", err)
	}
	return nil
}

// spawn runs fn in a goroutine that Close waits for, unless the runner is
// closed; it reports whether it did.
func (s *SSH) spawn(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// Close closes the connection and waits for the runner's goroutines. Calls
// after Close return ErrClosed.
func (s *SSH) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.cur
	s.cur = nil
	s.mu.Unlock()
	s.cancel()
	if c != nil {
		c.close()
	}
	s.wg.Wait()
	return nil
}
