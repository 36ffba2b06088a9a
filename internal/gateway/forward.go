package gateway

import (
	"context"
	"fmt"
	"net"
	"path"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/relay"
	"golang.org/x/crypto/ssh"
)

// dialForward opens a connection to port of g's job on its node, over
// node, the gateway's connection to that node's sshd. It is the one place
// that decides what "the job's port" is. When the job runs a relay, it is
// the relay's forward entry, which passes the connection only to a
// listener of the job's user: whoever else listens on the node's 127.0.0.1
// at that port (any user of a shared node may, before the job) never gets
// it. Otherwise (a site without a socket directory root: shadow.RunsRelay)
// it is whatever listens on the node's loopback at port, as a per-pod SSH
// connection reaches it.
func dialForward(ctx context.Context, node *ssh.Client, g *Grant, port int32) (net.Conn, error) {
	if g.Relayed {
		return dialEntry(ctx, node, g, port)
	}
	addr := net.JoinHostPort(forwardHost, strconv.Itoa(int(port)))
	c, err := node.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("forward to %s on node %s: %w", addr, g.Node, err)
	}
	return c, nil
}

// dialEntry opens the relay's forward entry in g's socket directory and
// asks it for port.
func dialEntry(ctx context.Context, node *ssh.Client, g *Grant, port int32) (net.Conn, error) {
	if g.SocketDir == "" {
		return nil, fmt.Errorf("forward to port %d: the pod's socket directory is not known yet", port)
	}
	// The relay answers within its own bounds (the connect and the accept
	// it waits for); a relay that does not must not hold the channel's slot.
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	entry := path.Join(g.SocketDir, relay.ForwardSocket)
	c, err := node.DialContext(ctx, "unix", entry)
	if err != nil {
		return nil, fmt.Errorf("forward to port %d: open %s on node %s: %w", port, entry, g.Node, err)
	}
	if err := relay.OpenForwardContext(ctx, c, uint16(port)); err != nil {
		return nil, fmt.Errorf("forward to port %d on node %s: %w", port, g.Node, err)
	}
	return c, nil
}
