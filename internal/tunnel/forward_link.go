package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	jobrelay "github.com/sluice-hpc/sluice/internal/relay"
)

// link holds a forward's SSH connections: one to the login node and, with
// TargetNode, one through it to the current node's sshd. Clients share
// them; concurrent clients that find them broken share one attempt to make
// them again.
type link struct {
	hop     *Hop
	target  Target
	log     *slog.Logger
	ctx     context.Context // the forward's; ends every connection
	wg      *sync.WaitGroup
	backMin time.Duration
	backMax time.Duration
	kaEvery time.Duration
	kaWait  time.Duration
	onKey   func(error)
	nodeOf  func() string // the current node, "" if none
	entry   string        // the file naming the socket directory of the relay's forward entry; "" for none
	metrics *Metrics
	status  *Status

	mu       sync.Mutex
	login    *sshConn      // nil if none
	node     *sshConn      // the connection to the node's sshd; nil if none
	dialing  chan struct{} // closed when the attempt in progress ends; nil if none
	lastErr  error         // why the last attempt failed
	failures int           // attempts failed in a row
	retryAt  time.Time     // no attempt before this, after failures
	alarmed  bool          // a host key error was logged in this series
	attempts int
	lost     bool // a connection was lost: the next one made is a reconnect
}

// sshConn is one SSH connection of a link.
type sshConn struct {
	client *ssh.Client
	hop    string // "login" or "node"
	node   string // the node, for a node connection
	dead   chan struct{}
	once   sync.Once
	refs   int  // channels open on it; under link.mu
	stale  bool // the node changed: close once refs is 0; under link.mu
}

func (c *sshConn) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// close closes c; it reports whether this call did.
func (c *sshConn) close() bool {
	first := false
	c.once.Do(func() {
		first = true
		close(c.dead)
		c.client.Close()
	})
	return first
}

func (f *Forward) newLink(ctx context.Context, log *slog.Logger, wg *sync.WaitGroup, nodeOf func() string) *link {
	return &link{
		hop:     f.Hop,
		target:  f.target(),
		log:     log,
		ctx:     ctx,
		wg:      wg,
		backMin: orDefault(f.BackoffMin, 500*time.Millisecond),
		backMax: orDefault(f.BackoffMax, time.Minute),
		kaEvery: orDefault(f.KeepAliveInterval, 15*time.Second),
		kaWait:  orDefault(f.KeepAliveTimeout, 15*time.Second),
		onKey:   f.OnHostKeyError,
		nodeOf:  nodeOf,
		entry:   f.EntryDirFile,
		metrics: f.Metrics,
		status:  f.Status,
	}
}

// dial opens a channel to port on the current node: through the job's
// relay, which passes it only to a listener of the job's user, when the
// forward has its entry (EntryDirFile); else on the node's loopback
// through its sshd (TargetNode), or to node:port from the login node
// (TargetLogin). A connection found broken is dropped and made again once.
// The returned conn releases its SSH connection when closed; node is the
// node it reaches.
func (l *link) dial(ctx context.Context, port int) (net.Conn, string, error) {
	for try := 0; ; try++ {
		c, node, err := l.acquire(ctx)
		if err != nil {
			return nil, node, err
		}
		conn, addr, err := l.open(ctx, c, node, port)
		if err == nil {
			return &heldConn{Conn: conn, release: func() { l.release(c) }}, node, nil
		}
		l.release(c)
		var refused *ssh.OpenChannelError
		var entry *entryError
		if errors.As(err, &refused) || errors.As(err, &entry) || ctx.Err() != nil || try > 0 {
			return nil, node, fmt.Errorf("dial %s via %s: %w", addr, c.hop, err)
		}
		l.drop(c, err)
	}
}

// open opens the channel for port over c, and says where it goes.
func (l *link) open(ctx context.Context, c *sshConn, node string, port int) (net.Conn, string, error) {
	if l.entry != "" {
		dir, err := readEntryDir(l.entry)
		if err != nil {
			return nil, jobrelay.ForwardSocket, err
		}
		addr := path.Join(dir, jobrelay.ForwardSocket)
		conn, err := openEntry(ctx, c.client, dir, port)
		return conn, addr, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if l.target == TargetLogin {
		addr = net.JoinHostPort(node, strconv.Itoa(port))
	}
	conn, err := c.client.DialContext(ctx, "tcp", addr)
	return conn, addr, err
}

// heldConn is a channel that holds its SSH connection open until closed.
type heldConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (h *heldConn) Close() error {
	err := h.Conn.Close()
	h.once.Do(h.release)
	return err
}

func (h *heldConn) CloseWrite() error {
	if cw, ok := h.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return h.Conn.Close()
}

// acquire returns the connection to open channels on for the current node,
// holding it until release, and the node. It waits for the attempt in
// progress, starts one when there is none, and fails at once during a
// backoff or while no node is known.
func (l *link) acquire(ctx context.Context) (*sshConn, string, error) {
	for try := 1; ; try++ {
		node := l.nodeOf()
		if node == "" {
			return nil, "", errNoNode
		}
		l.mu.Lock()
		if c := l.ready(node); c != nil {
			c.refs++
			l.mu.Unlock()
			return c, node, nil
		}
		if l.dialing == nil {
			if wait := time.Until(l.retryAt); wait > 0 {
				err := l.lastErr
				l.mu.Unlock()
				return nil, node, fmt.Errorf("connect: %w in %v: %w", errBackoff, wait.Round(time.Millisecond), err)
			}
			done := make(chan struct{})
			l.dialing = done
			l.wg.Go(func() { l.connect(node, done) })
		}
		dialing := l.dialing
		l.mu.Unlock()

		select {
		case <-dialing:
		case <-ctx.Done():
			return nil, node, fmt.Errorf("connect: %w", ctx.Err())
		}
		l.mu.Lock()
		if c := l.ready(node); c != nil {
			c.refs++
			l.mu.Unlock()
			return c, node, nil
		}
		err := l.lastErr
		l.mu.Unlock()
		switch {
		case err != nil:
			return nil, node, fmt.Errorf("connect: %w", err)
		case l.ctx.Err() != nil:
			return nil, node, fmt.Errorf("connect: %w", l.ctx.Err())
		case try == 3:
			return nil, node, errors.New("connect: the connection broke right after connecting")
		}
		// The attempt was for another node (the node changed), or its
		// connection broke at once: try again.
	}
}

var (
	// errNoNode is the error of a client that arrives while no node is known.
	errNoNode = errors.New("no node known")
	// errBackoff is the error of a client that arrives while the link waits
	// before its next attempt.
	errBackoff = errors.New("next attempt")
)

// ready returns the live connection to open channels on for node, or nil.
// l.mu is held.
func (l *link) ready(node string) *sshConn {
	if l.login == nil || !l.login.alive() {
		return nil
	}
	if l.target == TargetLogin {
		return l.login
	}
	if l.node == nil || !l.node.alive() || l.node.node != node {
		return nil
	}
	return l.node
}

func (l *link) release(c *sshConn) {
	l.mu.Lock()
	c.refs--
	done := c.stale && c.refs == 0
	l.mu.Unlock()
	if done && c.close() {
		l.log.Info("ssh connection to old node closed", "node", c.node)
	}
}

// retire is told the node changed: the connection to another node's sshd is
// closed once its last channel ends, and a backoff is cut short, since the
// new node may well answer.
func (l *link) retire(node string) {
	l.mu.Lock()
	c := l.node
	done := false
	if c != nil && c.node != node {
		l.node = nil
		c.stale = true
		done = c.refs == 0
		l.metrics.SetUp(false)
	}
	l.failures, l.retryAt, l.alarmed = 0, time.Time{}, false
	if node == "" {
		l.status.set(StateWaiting, "", nil)
	} else {
		l.status.set(StateConnecting, node, nil)
	}
	l.mu.Unlock()
	if done && c.close() {
		l.log.Info("ssh connection to old node closed", "node", c.node)
	}
}

// drop closes c and forgets it, so that the next client connects again.
// Dropping the login connection drops the node connection made through it.
func (l *link) drop(c *sshConn, reason error) {
	l.mu.Lock()
	var also *sshConn
	current := true
	switch {
	case l.login == c:
		l.login = nil
		also, l.node = l.node, nil
	case l.node == c:
		l.node = nil
	default:
		current = false
	}
	if current {
		l.lost = true
		l.metrics.SetUp(false)
		l.status.set(StateDown, l.nodeOf(), fmt.Errorf("ssh connection to the %s lost: %w", hopName(c.hop), reason))
	}
	l.mu.Unlock()
	if c.close() {
		l.log.Warn("ssh connection lost", "hop", c.hop, "node", c.node, "error", reason)
	}
	if also != nil {
		also.close()
	}
}

// keepUp makes the connection as soon as a node is known and again when it
// is lost, checking every interval, until ctx ends. It goes through acquire,
// like a client, so it shares attempts and honours the backoff.
func (l *link) keepUp(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		c, _, err := l.acquire(ctx)
		switch {
		case err == nil:
			l.release(c)
		case errors.Is(err, errNoNode):
			l.status.set(StateWaiting, "", nil)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hopName names a hop in messages.
func hopName(hop string) string {
	if hop == "login" {
		return "login node"
	}
	return "compute node"
}
