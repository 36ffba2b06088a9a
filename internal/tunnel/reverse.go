package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
)

// Reverse carries connections the job makes on its compute node to
// endpoints in the cluster (SPEC S5).
//
// Once NodeFile names the node (it is polled, and a change is followed), a
// session is made to the node's own sshd through the login node, with the
// host keys of both checked. It makes sure the socket directory exists,
// owner-only, and asks the sshd for one remote unix-socket forward per
// endpoint, at SocketDir/rev-<ListenPort>.sock; each connection arriving
// there is dialled to the endpoint's Host:Port in the cluster. With Sshd
// userspace the forwards are asked of an sshd -i the session starts as the
// user instead (reverse_userspace.go); with NodeExec srun the node's sshd is
// not used at all: the session's commands and that sshd run with srun from
// the login node (reverse_exec.go). A SocksPort adds a SOCKS5 proxy in a
// session of its own (reverse_socks.go).
//
// A holder command keeps the session while the directory (the same one:
// a requeue recreates it under the same path) and every socket exist; it
// writes to its channel each second, so that it also ends on the node when
// the connection drops. When the holder ends or the connection breaks, the
// connection is closed, which takes the forwards down, and made again after
// a backoff, growing with each attempt that fails. A host key that does
// not match is logged at error level once per series of failures, given to
// OnHostKeyError, and retried only after BackoffMax.
type Reverse struct {
	// Hop reaches the login node and the compute nodes. Required.
	Hop *Hop
	// NodeFile names the job's compute node (ReadNode). Required.
	NodeFile string
	// SocketDir is the pod's socket directory on the node,
	// <SocketDirRoot>/<pod uid>: an absolute path. Required.
	SocketDir string
	// Endpoints are the forwards, with distinct listen ports. At least
	// one, or a SocksPort.
	Endpoints []Endpoint
	// SocksPort, when not 0, asks for a SOCKS5 proxy on 127.0.0.1:SocksPort
	// of the node (Reverse.AllowSocks), in a session of its own that holds
	// on the socket directory alone: a port another user takes while the
	// tunnel is down keeps the proxy down, not the forwards. The proxy dials
	// with a net.Dialer of its own (not Dial) using Resolver, which refuses
	// every address of the shadow pod itself, checked once resolved:
	// loopback, unspecified, and its interfaces' addresses.
	SocksPort int
	// Sshd is where the remote forwards are asked: SshdNode (the default
	// when empty) or SshdUserspace.
	Sshd string
	// SshdPath is the sshd binary on the node for SshdUserspace. If empty,
	// DefaultSshdPath.
	SshdPath string
	// NodeExec is how the node is reached: NodeExecSSH (the default when
	// empty) or NodeExecSrun, which always uses a user-space sshd.
	NodeExec string
	// JobFile holds the job's Slurm id, for NodeExecSrun (ReadJob).
	JobFile string
	// Dial opens connections to the endpoints in the cluster, each within
	// the Hop's timeout. If nil, a net.Dialer using Resolver.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Resolver resolves the names of the endpoints (without Dial) and of
	// the SOCKS proxy's destinations. If nil, net.DefaultResolver.
	Resolver *net.Resolver
	// Log receives the tunnel's events. If nil, slog.Default().
	Log *slog.Logger
	// Metrics counts connections, bytes, reconnects and failed dials. If
	// nil, nothing is counted.
	Metrics *Metrics
	// BackoffMin and BackoffMax bound the wait after a failed attempt or a
	// lost session. If zero, 500ms and 1m.
	BackoffMin, BackoffMax time.Duration
	// PollInterval is the time between reads of NodeFile. If zero, 1s.
	PollInterval time.Duration
	// KeepAliveInterval and KeepAliveTimeout pace the keepalives of the
	// SSH connection to the node and bound their answer. If zero, 15s and
	// 15s.
	KeepAliveInterval, KeepAliveTimeout time.Duration
	// OnHostKeyError is called with the error of each attempt that failed
	// on a host key, of the login node or of the compute node (the error
	// wraps an *sshx.HostKeyError). If nil, the error is only logged.
	OnHostKeyError func(error)
	// OnState is called with true when the forwards are held and with
	// false when they are lost (or Run ends while they are held), on each
	// change only. It is called from Run's goroutine and should not block
	// for long. If nil, nothing is called.
	OnState func(up bool)
	// Status follows the state of the session. If nil, none is kept.
	Status *Status

	socksGuard destGuard // the SOCKS proxy's destination check
}

// stableSession is how long a session must have held for the failures
// before it to be forgotten: one that breaks sooner backs off further.
const stableSession = 10 * time.Second

// Run holds the forwards until ctx ends; it returns nil then, once every
// connection has been closed. An invalid Reverse is the only error.
func (r *Reverse) Run(ctx context.Context) error {
	if err := r.check(); err != nil {
		return fmt.Errorf("reverse: %w", err)
	}
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("socket_dir", r.SocketDir)

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	var states []*reverseState
	if len(r.Endpoints) > 0 {
		states = append(states, &reverseState{r: r, log: log, primary: true})
	}
	if r.SocksPort != 0 {
		log.Warn("SOCKS proxy asked for: every user of the node can reach the cluster through it (Reverse.AllowSocks)", "port", r.SocksPort)
		states = append(states, &reverseState{r: r, log: log.With("session", "socks"), socks: true, primary: len(states) == 0})
	}
	for _, s := range states {
		s.changed = make(chan struct{}, 1)
	}
	w := &nodeWatch{file: r.NodeFile, every: orDefault(r.PollInterval, time.Second), log: log}
	w.onChange = func(string) {
		for _, s := range states {
			select {
			case s.changed <- struct{}{}:
			default:
			}
		}
	}
	w.poll()
	wg.Go(func() { w.run(ctx) })

	var loops sync.WaitGroup
	for _, s := range states {
		loops.Go(func() { s.loop(ctx, w, s.changed) })
	}
	loops.Wait()
	return nil
}

// loop makes sessions to the node w names, one after the other, until ctx
// ends.
func (s *reverseState) loop(ctx context.Context, w *nodeWatch, changed <-chan struct{}) {
	defer func() {
		s.set(false)
		s.log.Info(s.what() + " stopped")
	}()
	for ctx.Err() == nil {
		node := w.node()
		if node == "" {
			if s.primary {
				s.r.Status.set(StateWaiting, "", nil)
			}
			s.log.Info(s.what() + " waiting for the node")
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		wait, nodeChanged := s.attempt(ctx, node, changed)
		if nodeChanged {
			continue
		}
		select {
		case <-ctx.Done():
		case <-changed:
			// The new node may well answer: no backoff.
			s.failures, s.alarmed = 0, false
		case <-time.After(wait):
		}
	}
}

// what names the session in log lines.
func (s *reverseState) what() string {
	if s.socks {
		return "SOCKS proxy"
	}
	return "reverse tunnel"
}

func (r *Reverse) check() error {
	switch {
	case r.Hop == nil:
		return errors.New("no hop")
	case r.NodeFile == "":
		return errors.New("no node file")
	case len(r.Endpoints) == 0 && r.SocksPort == 0:
		return errors.New("no endpoint and no SOCKS port")
	case r.Sshd != "" && r.Sshd != SshdNode && r.Sshd != SshdUserspace:
		return fmt.Errorf("sshd %q: want %q or %q", r.Sshd, SshdNode, SshdUserspace)
	case r.NodeExec != "" && r.NodeExec != NodeExecSSH && r.NodeExec != NodeExecSrun:
		return fmt.Errorf("node exec %q: want %q or %q", r.NodeExec, NodeExecSSH, NodeExecSrun)
	case r.NodeExec == NodeExecSrun && r.JobFile == "":
		return errors.New("node exec srun needs a job file")
	case r.SshdPath != "" && !path.IsAbs(r.SshdPath):
		return fmt.Errorf("sshd path %q is not absolute", r.SshdPath)
	case r.SocksPort < 0 || r.SocksPort > 65535:
		return fmt.Errorf("SOCKS port %d: out of range", r.SocksPort)
	case r.BackoffMin < 0 || r.BackoffMax < 0 || r.PollInterval < 0 || r.KeepAliveInterval < 0 || r.KeepAliveTimeout < 0:
		return errors.New("durations must not be negative")
	case r.BackoffMax != 0 && r.BackoffMax < orDefault(r.BackoffMin, 500*time.Millisecond):
		return fmt.Errorf("backoff max %v is below backoff min", r.BackoffMax)
	}
	seen := map[int]bool{}
	for _, e := range r.Endpoints {
		if err := e.check(); err != nil {
			return err
		}
		if seen[e.ListenPort] {
			return fmt.Errorf("endpoint %s: listen port %d listed twice", e, e.ListenPort)
		}
		seen[e.ListenPort] = true
	}
	if seen[r.SocksPort] {
		return fmt.Errorf("SOCKS port %d is also a listen port", r.SocksPort)
	}
	return checkSocketDir(r.SocketDir, r.Endpoints)
}

// reverseState is what Run knows across sessions. Its fields are Run's
// goroutine's, but for those under mu, which the connections share.
type reverseState struct {
	r        *Reverse
	log      *slog.Logger
	socks    bool          // the session holds the SOCKS proxy, not the forwards
	primary  bool          // its state is the tunnel's: Metrics' up, OnState, Status
	changed  chan struct{} // told of a node change
	up       bool          // the forwards are held
	everUp   bool          // a session was up before: the next one is a reconnect
	failures int           // sessions in a row that failed or did not hold long
	alarmed  bool          // a host key error was logged in this series
	attempts int

	mu          sync.Mutex
	unreachable map[int]bool // listen ports whose last dial failed
}

// attempt makes one session to node and holds it until it ends, ctx ends
// or the node changes (reported by nodeChanged); it returns the wait
// before the next attempt.
func (s *reverseState) attempt(ctx context.Context, node string, changed <-chan struct{}) (wait time.Duration, nodeChanged bool) {
	s.attempts++
	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case <-changed:
			stop(errNodeChanged)
		case <-sctx.Done():
		}
	}()
	log := s.log.With("node", node, "attempt", s.attempts)
	if st := s.r.Status.Snapshot(); s.primary && (st.Node != node || st.State == StateWaiting) {
		s.r.Status.set(StateConnecting, node, nil)
	}
	var heldAt time.Time
	err := s.session(sctx, node, log, func() {
		heldAt = time.Now()
		s.set(true)
		if s.primary {
			s.r.Status.set(StateUp, node, nil)
			if s.everUp {
				s.r.Metrics.Reconnect()
			}
		}
		if s.socks {
			log.Warn("SOCKS proxy up: open to every user of the node", "addr", socksAddr(s.r.SocksPort), "reconnect", s.everUp)
		} else {
			log.Info("reverse tunnel up", "endpoints", len(s.r.Endpoints), "reconnect", s.everUp)
		}
		s.everUp = true
	})
	wasUp := s.up
	s.set(false)
	switch {
	case ctx.Err() != nil:
		return 0, false
	case errors.Is(context.Cause(sctx), errNodeChanged):
		s.failures, s.alarmed = 0, false
		if wasUp {
			log.Info(s.what() + " down: the node changed")
		}
		return 0, true
	}
	if wasUp && time.Since(heldAt) >= stableSession {
		s.failures = 0
	}
	if s.primary {
		s.r.Status.failed(node, err)
	}
	s.failures++
	backMax := orDefault(s.r.BackoffMax, time.Minute)
	var keyErr *sshx.HostKeyError
	if errors.As(err, &keyErr) {
		if s.r.OnHostKeyError != nil {
			s.r.OnHostKeyError(err)
		}
		if !s.alarmed {
			s.alarmed = true
			log.Error("host key rejected: not connecting (a man-in-the-middle, or wrong pinned host keys)",
				"host", keyErr.Host, "retry_in", backMax, "error", err)
		} else {
			log.Debug("host key rejected", "host", keyErr.Host, "retry_in", backMax)
		}
		return backMax, false
	}
	s.alarmed = false
	wait = backoffAfter(s.failures, orDefault(s.r.BackoffMin, 500*time.Millisecond), backMax)
	if wasUp {
		log.Warn(s.what()+" down", "held", time.Since(heldAt).Round(time.Millisecond), "retry_in", wait, "error", err)
	} else {
		log.Warn(s.what()+" connect failed", "failures", s.failures, "retry_in", wait, "error", err)
	}
	return wait, false
}

// set records whether the forwards are held, telling Metrics and OnState
// of a change.
func (s *reverseState) set(up bool) {
	if s.up == up {
		return
	}
	s.up = up
	if !s.primary {
		return
	}
	s.r.Metrics.SetUp(up)
	if s.r.OnState != nil {
		s.r.OnState(up)
	}
}

// errNodeChanged ends a session whose node is no longer the job's.
var errNodeChanged = errors.New("the node changed")
