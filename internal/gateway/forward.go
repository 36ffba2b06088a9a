package gateway

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"golang.org/x/crypto/ssh"
)

// dialForward opens a connection to port of g's job on its node, over
// node, the gateway's connection to that node's sshd. It is the one place
// that decides what "the job's port" is: today whatever listens on the
// node's loopback at that port, as a per-pod SSH connection reached it;
// the relay's owner-checked entry (fwd.sock, issue 23 item 3) replaces it
// here.
func dialForward(ctx context.Context, node *ssh.Client, g *Grant, port int32) (net.Conn, error) {
	addr := net.JoinHostPort(forwardHost, strconv.Itoa(int(port)))
	c, err := node.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("forward to %s on node %s: %w", addr, g.Node, err)
	}
	return c, nil
}
