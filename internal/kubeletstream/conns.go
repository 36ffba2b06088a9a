// Package kubeletstream serves the kubelet API's streaming requests
// (port-forward, exec, attach) of pods that run as Slurm jobs: each goes to
// the job's batch host through the site's login node. The protocols
// (SPDY and websocket) are virtual-kubelet's; this package gives them their
// ends on the site, bounds the sessions and logs each with its user.
package kubeletstream

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

// keepAlive is the interval and timeout of the keepalives on the login
// connection.
const keepAlive = 15 * time.Second

// Conns holds the SSH connections the streams go over: one to the login
// node, made on first use and again after it broke; a second one for the
// port-forward streams carried by srun (each an SSH session, kept apart
// from exec's within the login sshd's MaxSessions); and one to each
// compute node in use (through the login node, its host key checked
// against the Hop's pinned keys), shared by that node's streams and closed
// when the last of them ends.
type Conns struct {
	// Hop reaches the login node and the compute nodes. Required.
	Hop *tunnel.Hop
	// Logger. If nil, slog.Default().
	Logger *slog.Logger

	mu      sync.Mutex
	login   *ssh.Client
	carrier *ssh.Client
	nodes   map[string]*nodeConn
	closed  bool
	// dialing holds, for each login slot, one token while its
	// connection is being made: the callers of that slot wait for it (or
	// for their context), and mu is not held meanwhile, so that a slow
	// dial stalls no other stream, no release and no Close.
	dialing map[**ssh.Client]chan struct{}
}

// nodeConn is one compute node's connection and the streams using it.
type nodeConn struct {
	ready  chan struct{} // closed once client or err is set
	client *ssh.Client
	err    error
	users  int
}

func (c *Conns) log() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// Login returns the connection to the login node, made if there is none.
func (c *Conns) Login(ctx context.Context) (*ssh.Client, error) {
	return c.loginConn(ctx, &c.login, "login")
}

// Carrier returns the login node connection of the srun-carried streams,
// made if there is none.
func (c *Conns) Carrier(ctx context.Context) (*ssh.Client, error) {
	return c.loginConn(ctx, &c.carrier, "carrier")
}

// loginConn returns *slot, a connection to the login node, made if there
// is none and forgotten once it broke. One caller of a slot dials at a
// time; the others wait for it or for their ctx.
func (c *Conns) loginConn(ctx context.Context, slot **ssh.Client, name string) (*ssh.Client, error) {
	if c.Hop == nil {
		return nil, errors.New("kubeletstream: no hop to the site")
	}
	token := c.dialToken(slot)
	select {
	case token <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("login node: %w", context.Cause(ctx))
	}
	defer func() { <-token }()
	c.mu.Lock()
	cl, closed := *slot, c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return nil, errConnsClosed
	case cl != nil:
		return cl, nil
	}
	cl, err := c.Hop.Login(ctx)
	if err != nil {
		return nil, fmt.Errorf("login node: %w", err)
	}
	c.mu.Lock()
	if c.closed { // Close came while it dialled
		c.mu.Unlock()
		cl.Close()
		return nil, errConnsClosed
	}
	*slot = cl
	c.mu.Unlock()
	go func() {
		err := sshx.KeepAlive(context.Background(), cl, keepAlive, keepAlive)
		c.mu.Lock()
		if *slot == cl {
			*slot = nil
		}
		c.mu.Unlock()
		cl.Close()
		c.log().Info("kubeletstream: login connection ended", "conn", name, "error", err)
	}()
	return cl, nil
}

// errConnsClosed is the error of a connection asked for after Close.
var errConnsClosed = errors.New("kubeletstream: the site's connections are closed")

// dialToken is the channel holding slot's dial token.
func (c *Conns) dialToken(slot **ssh.Client) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dialing == nil {
		c.dialing = map[**ssh.Client]chan struct{}{}
	}
	t, ok := c.dialing[slot]
	if !ok {
		t = make(chan struct{}, 1)
		c.dialing[slot] = t
	}
	return t
}

// Node returns a connection to host's own sshd and the function that gives
// it back: the connection is closed once every user gave it back.
func (c *Conns) Node(ctx context.Context, host string) (*ssh.Client, func(), error) {
	c.mu.Lock()
	if c.nodes == nil {
		c.nodes = map[string]*nodeConn{}
	}
	nc := c.nodes[host]
	if nc == nil {
		nc = &nodeConn{ready: make(chan struct{})}
		c.nodes[host] = nc
		go c.dialNode(context.WithoutCancel(ctx), host, nc)
	}
	nc.users++
	c.mu.Unlock()

	release := func() { c.release(host, nc) }
	select {
	case <-nc.ready:
	case <-ctx.Done():
		release()
		return nil, nil, fmt.Errorf("node %s: %w", host, ctx.Err())
	}
	if nc.err != nil {
		release()
		return nil, nil, nc.err
	}
	return nc.client, release, nil
}

// dialNode connects nc to host; a failed or broken connection is dropped
// from the pool so that the next stream dials again.
func (c *Conns) dialNode(ctx context.Context, host string, nc *nodeConn) {
	login, err := c.Login(ctx)
	if err == nil {
		nc.client, err = c.Hop.Node(ctx, login, host)
		if err != nil {
			err = fmt.Errorf("node %s: %w", host, err)
		}
	}
	nc.err = err
	close(nc.ready)
	if err != nil {
		c.drop(host, nc)
		return
	}
	c.mu.Lock()
	idle := nc.users == 0 // every stream gave up while it dialled
	c.mu.Unlock()
	if idle {
		nc.client.Close()
	}
	nc.client.Wait()
	c.drop(host, nc)
}

func (c *Conns) drop(host string, nc *nodeConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[host] == nc {
		delete(c.nodes, host)
	}
}

func (c *Conns) release(host string, nc *nodeConn) {
	c.mu.Lock()
	nc.users--
	last := nc.users == 0
	if last && c.nodes[host] == nc {
		delete(c.nodes, host)
	}
	c.mu.Unlock()
	if !last {
		return
	}
	select {
	case <-nc.ready:
		if nc.client != nil {
			nc.client.Close()
		}
	default: // dialNode closes it once dialled
	}
}

// Close closes every connection.
func (c *Conns) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for host, nc := range c.nodes {
		select {
		case <-nc.ready:
			if nc.client != nil {
				nc.client.Close()
			}
		default:
		}
		delete(c.nodes, host)
	}
	for _, slot := range []**ssh.Client{&c.login, &c.carrier} {
		if *slot != nil {
			(*slot).Close()
			*slot = nil
		}
	}
	return nil
}
