package sshx

import (
	"context"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"
)

// DialFunc opens a connection to addr, like net.Dialer.DialContext or
// (*ssh.Client).DialContext for a hop through a jump host.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dial connects to addr with dial and runs the SSH handshake over the
// connection with cfg. Cancelling ctx, or its deadline passing, closes the
// connection and ends the handshake: give ctx a deadline to bound it.
//
// cfg must have a HostKeyCallback; the host key is checked against addr.
func Dial(ctx context.Context, dial DialFunc, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	if cfg == nil || cfg.HostKeyCallback == nil {
		return nil, fmt.Errorf("ssh dial %s: no host key callback: host keys must be pinned", addr)
	}
	if dial == nil {
		return nil, fmt.Errorf("ssh dial %s: no dialer", addr)
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh dial %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if !stop() {
		// ctx ended during the handshake and closed conn.
		if err == nil {
			c.Close()
		}
		return nil, fmt.Errorf("ssh handshake %s: %w", addr, context.Cause(ctx))
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh handshake %s: %w", addr, err)
	}
	return ssh.NewClient(c, chans, reqs), nil
}
