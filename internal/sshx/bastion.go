package sshx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/crypto/ssh"
)

// Bastion is an SSH host in front of the login node: every connection to
// the login node is a channel of an SSH connection to the bastion, whose
// own host key is checked first. Each dial makes its own connection to the
// bastion, closed with the channel, so that a broken bastion connection
// takes down one login connection and is made again with it.
type Bastion struct {
	// Addr is the bastion's sshd, host:port.
	Addr string
	// Config authenticates to the bastion and checks its host key (a
	// HostKeyCallback is required, see HostKeys).
	Config *ssh.ClientConfig
	// Dial opens the TCP connection to the bastion. If nil, a net.Dialer.
	Dial DialFunc
}

// DialContext connects to the bastion and, through it, to addr. It is a
// DialFunc for the login hop. The bastion's host key is checked against
// Config; addr's is the caller's to check on the returned connection.
func (b *Bastion) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if b == nil || b.Config == nil {
		return nil, errors.New("bastion: not configured")
	}
	dial := b.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	client, err := Dial(ctx, dial, b.Addr, b.Config)
	if err != nil {
		return nil, fmt.Errorf("bastion %s: %w", b.Addr, err)
	}
	conn, err := client.DialContext(ctx, network, addr)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("bastion %s: open a channel to %s: %w", b.Addr, addr, err)
	}
	return &bastionConn{Conn: conn, client: client}, nil
}

// bastionConn is a channel through the bastion that closes its bastion
// connection when closed.
type bastionConn struct {
	net.Conn
	client *ssh.Client
	once   sync.Once
}

func (c *bastionConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.client.Close() })
	return err
}
