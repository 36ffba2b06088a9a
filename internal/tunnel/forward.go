package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	jobrelay "github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// Target is where a forward asks for the job's ports to be dialed.
type Target string

const (
	// TargetNode reaches the compute node's own sshd through the login node
	// and has it dial the port on the node's loopback. The zero Target
	// means TargetNode.
	TargetNode Target = "node"
	// TargetLogin has the login node dial <node>:<port>.
	TargetLogin Target = "login"
)

// Forward listens on the ports a job exposes and carries each connection to
// the job over one SSH connection through the login node (SPEC S4).
//
// The node comes from NodeFile, polled so that a node change is followed:
// new connections go to the new node, and the connection to the old node's
// sshd is closed once its last channel has ended. While no node is known,
// clients are refused (their connection is closed at once).
//
// The SSH connection is made as soon as a node is known, kept alive, and
// made again when it breaks, so that Status tells whether the job can be
// reached before any client comes; a client that finds it broken makes it
// again at once. Failed attempts back off
// exponentially with jitter; clients arriving during a backoff are refused.
// A host key that does not match (sshx.HostKeyError) is most likely a
// man-in-the-middle or a wrong ConfigMap: it is logged at error level once
// per series of failures, given to OnHostKeyError, and retried only after
// BackoffMax.
//
// Clients are bounded (MaxConns, IdleTimeout, StallTimeout, MaxStalled) so
// that clients that flood a port or stop reading can neither take the
// tunnel past its memory nor stall the others; half-closes are carried
// both ways.
type Forward struct {
	// Hop reaches the login node and the compute nodes. Required.
	Hop *Hop
	// Target is where the ports are dialed. If empty, TargetNode.
	Target Target
	// Ports are the TCP ports the job listens on. Required.
	Ports []int
	// NodeFile names the job's compute node (ReadNode). Required.
	NodeFile string
	// EntryDirFile names the pod's socket directory on the node, where the
	// job's relay serves its forward entry (relay.ForwardSocket); it is
	// read at each connection, and is empty until the job is submitted.
	// When set (TargetNode only), each connection opens the entry and asks
	// the relay for its port: the relay joins it only to a listener of the
	// job's user, and a refusal closes the client (RefusedDial, the
	// relay's reason logged). If empty, connections go to 127.0.0.1:PORT
	// on the node, to whatever listens there: for a job without a relay.
	EntryDirFile string
	// Listen is the address to listen on, "127.0.0.1" or "" for all; it is
	// used only when Listener is nil.
	Listen string
	// Listener listens for the clients of port. If nil, net.Listen on
	// Listen:port.
	Listener func(port int) (net.Listener, error)
	// Log receives connection events. If nil, slog.Default().
	Log *slog.Logger
	// BackoffMin and BackoffMax bound the wait after a failed connection
	// attempt. If zero, 500ms and 1m.
	BackoffMin, BackoffMax time.Duration
	// PollInterval is the time between reads of NodeFile. If zero, 1s.
	PollInterval time.Duration
	// KeepAliveInterval and KeepAliveTimeout pace the keepalives of the SSH
	// connections and bound their answer. If zero, 15s and 15s.
	KeepAliveInterval, KeepAliveTimeout time.Duration
	// OnHostKeyError is called with the error of each attempt that failed
	// on a host key, of the login node or of the compute node (the error
	// wraps an *sshx.HostKeyError). It runs on the attempt's goroutine
	// before the waiting clients are refused, so it must not block. If
	// nil, the error is only logged.
	OnHostKeyError func(error)
	// Metrics counts connections, bytes, reconnects and refusals. If nil,
	// nothing is counted.
	Metrics *Metrics
	// Status follows the state of the SSH connection. If nil, none is kept.
	Status *Status

	// MaxConns is how many connections the forward carries at once, all
	// ports together; a client beyond it is refused (its connection closed
	// at once) and counted under RefusedLimit. Each connection may hold up
	// to the SSH channel's window (2 MiB) of the job's bytes that the
	// tunnel has not yet written to its client, so this bounds the
	// tunnel's memory. If zero, DefaultMaxConns; if negative, no limit.
	MaxConns int
	// IdleTimeout closes a connection that carried no byte either way for
	// that long. If zero, DefaultIdleTimeout; if negative, none.
	IdleTimeout time.Duration
	// StallTimeout closes a connection whose client has not taken one
	// write of the job's bytes (32 KiB at most) within that time. If zero,
	// DefaultStallTimeout; if negative, none.
	StallTimeout time.Duration
	// MaxStalled is how many connections of all ports may have a client
	// that does not keep up at once: the job's bytes then wait in the
	// tunnel's memory, up to the SSH channel's window (2 MiB) each. A
	// connection whose client stops reading beyond it is closed at once.
	// If zero, DefaultMaxStalled; if negative, no limit.
	MaxStalled int
}

// Run listens on every port, then serves clients until ctx ends; it returns
// nil then, once every connection has been closed. A port it cannot listen
// on is a configuration error, returned before anything is served; so is an
// invalid Forward.
func (f *Forward) Run(ctx context.Context) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	log := f.Log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("target", string(f.target()))
	lns, err := f.listen()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
		f.Metrics.SetUp(false)
	}()

	w := &nodeWatch{file: f.NodeFile, every: orDefault(f.PollInterval, time.Second), log: log}
	l := f.newLink(ctx, log, &wg, w.node)
	w.onChange = l.retire
	w.poll()
	wg.Go(func() { w.run(ctx) })
	wg.Go(func() { l.keepUp(ctx, w.every) })
	if f.EntryDirFile != "" {
		wg.Go(func() { watchEntryDir(ctx, f.EntryDirFile, w.every, f.Status) })
	}

	b := newBounds(f.limits(), f.Metrics)
	errs := make(chan error, len(lns))
	for i, ln := range lns {
		port := f.Ports[i]
		log.Info("forward listening", "port", port, "addr", ln.Addr().String())
		wg.Go(func() { errs <- f.serve(ctx, &wg, ln, port, l, b, log) })
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
}

func (f *Forward) check() error {
	switch {
	case f.Hop == nil:
		return errors.New("no hop")
	case f.Target != "" && f.Target != TargetNode && f.Target != TargetLogin:
		return fmt.Errorf("target %q: want %q or %q", f.Target, TargetNode, TargetLogin)
	case len(f.Ports) == 0:
		return errors.New("no port")
	case f.NodeFile == "":
		return errors.New("no node file")
	case f.EntryDirFile != "" && f.target() != TargetNode:
		return fmt.Errorf("an entry directory file needs target %q", TargetNode)
	case f.BackoffMin < 0 || f.BackoffMax < 0 || f.PollInterval < 0 || f.KeepAliveInterval < 0 || f.KeepAliveTimeout < 0:
		return errors.New("durations must not be negative")
	case f.BackoffMax != 0 && f.BackoffMax < orDefault(f.BackoffMin, 500*time.Millisecond):
		return fmt.Errorf("backoff max %v is below backoff min", f.BackoffMax)
	}
	seen := map[int]bool{}
	for _, p := range f.Ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("port %d: out of range", p)
		}
		if seen[p] {
			return fmt.Errorf("port %d: listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func (f *Forward) target() Target {
	if f.Target == "" {
		return TargetNode
	}
	return f.Target
}

// listen opens a listener per port, or none and an error.
func (f *Forward) listen() ([]net.Listener, error) {
	lns := make([]net.Listener, 0, len(f.Ports))
	for _, port := range f.Ports {
		var ln net.Listener
		var err error
		if f.Listener != nil {
			ln, err = f.Listener(port)
		} else {
			ln, err = net.Listen("tcp", net.JoinHostPort(f.Listen, strconv.Itoa(port)))
		}
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return nil, fmt.Errorf("forward: listen on port %d: %w", port, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// serve accepts the clients of port until ln is closed, handling each in
// its own goroutine; a client beyond MaxConns is refused at once.
func (f *Forward) serve(ctx context.Context, wg *sync.WaitGroup, ln net.Listener, port int, l *link, b *bounds, log *slog.Logger) error {
	pause := 5 * time.Millisecond
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("forward: accept on port %d: %w", port, err)
			}
			// Out of file descriptors and the like: wait and go on.
			log.Warn("forward accept failed", "port", port, "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 5 * time.Millisecond
		if !b.conns.take() {
			// Counted before the close, so that whoever sees the
			// close finds it counted.
			f.Metrics.Refused(RefusedLimit)
			conn.Close()
			if first, unlogged := b.refusals.event(time.Now()); first {
				log.Warn("forward connection limit reached: connections refused",
					"port", port, "max_conns", b.maxConns, "unlogged_before", unlogged)
			}
			continue
		}
		wg.Go(func() {
			defer b.conns.release()
			f.handle(ctx, conn, port, l, b, log)
		})
	}
}

// handle carries one client's connection to the job's port, or refuses it.
func (f *Forward) handle(ctx context.Context, client net.Conn, port int, l *link, b *bounds, log *slog.Logger) {
	defer client.Close()
	log = log.With("port", port, "client", client.RemoteAddr().String())
	remote, node, err := l.dial(ctx, port)
	switch {
	case errors.Is(err, errNoNode):
		f.Metrics.Refused(RefusedNoNode)
		log.Warn("no node known: connection refused")
		return
	case err != nil && ctx.Err() != nil:
		return
	case err != nil:
		f.Metrics.Refused(refusal(err))
		if reason, ok := siteRefusal(err); ok {
			f.Status.siteRefused(reason)
		}
		log.Warn("forward dial failed: connection refused", "node", node, "error", err)
		return
	}
	log = log.With("node", node)
	defer remote.Close()
	f.Metrics.ConnOpened(port)
	defer f.Metrics.ConnClosed()
	far := net.JoinHostPort(node, strconv.Itoa(port))
	g := newGuard(client, remote, b.limits, b.stalled, f.Metrics)
	n, err := relay(ctx, g.clientSide(), g.remoteSide(), "client", far, f.Metrics, BytesOut)
	g.stop()
	if reason := g.reason(); reason != "" {
		b.cutLogged(reason, log, "sent", n.Sent, "received", n.Received)
		return
	}
	if err != nil && ctx.Err() == nil {
		log.Info("forward connection failed", "sent", n.Sent, "received", n.Received, "error", err)
		return
	}
	log.Debug("forward connection closed", "sent", n.Sent, "received", n.Received)
}

// refusal is the reason a client was refused after err, for Metrics.
func refusal(err error) string {
	var keyErr *sshx.HostKeyError
	var channel *ssh.OpenChannelError
	var entry *entryError
	switch {
	case errors.Is(err, errNoNode):
		return RefusedNoNode
	case errors.As(err, &keyErr):
		return RefusedHostKey
	case errors.Is(err, errBackoff):
		return RefusedBackoff
	case errors.As(err, &channel), errors.As(err, &entry):
		return RefusedDial
	}
	return RefusedConnect
}

// siteRefusal says whether err is a refusal the pod's author is to be told
// of, and why: the job's relay refused for a reason it reports (another
// user's listener on the job's port, a bad port file), or the channel was
// prohibited: by the gateway (the same relay refusals, or a port it does
// not grant), or by an sshd that forbids forwarding.
func siteRefusal(err error) (string, bool) {
	var rf *jobrelay.RefusedError
	var channel *ssh.OpenChannelError
	switch {
	case errors.As(err, &rf) && rf.Report:
		return rf.Error(), true
	case errors.As(err, &channel) && channel.Reason == ssh.Prohibited:
		if channel.Message == "" {
			return channel.Reason.String(), true
		}
		return channel.Message, true
	}
	return "", false
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
