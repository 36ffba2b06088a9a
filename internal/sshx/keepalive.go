package sshx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
)

// KeepAliveRequest is the global request sent as a keepalive. Servers that
// do not know it still answer (with a failure), which is all that counts.
const KeepAliveRequest = "keepalive@openssh.com"

// Ping sends one keepalive request on conn and waits for the answer, at most
// until timeout or ctx ends. It does not close conn: after a timeout the
// request stays pending until the server answers or conn is closed.
func Ping(ctx context.Context, conn ssh.Conn, timeout time.Duration) error {
	answered := make(chan error, 1)
	go func() {
		_, _, err := conn.SendRequest(KeepAliveRequest, true, nil)
		answered <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-answered:
		if err != nil {
			return fmt.Errorf("ssh keepalive: %w", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("ssh keepalive: %w within %v", errNoReply, timeout)
	case <-ctx.Done():
		return fmt.Errorf("ssh keepalive: %w", ctx.Err())
	}
}

// KeepAlive pings conn every interval and closes it when a ping fails or is
// not answered within timeout. It returns nil when ctx is done, or the
// reason conn ended: the failed ping, or conn's own error when it was
// closed by someone else. The caller keeps owning conn; a goroutine waiting
// on conn.Wait outlives a return on ctx until conn is closed.
func KeepAlive(ctx context.Context, conn ssh.Conn, interval, timeout time.Duration) error {
	if interval <= 0 || timeout <= 0 {
		return fmt.Errorf("ssh keepalive: interval %v and timeout %v must be positive", interval, timeout)
	}
	closed := make(chan error, 1)
	go func() { closed <- conn.Wait() }()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-closed:
			return fmt.Errorf("ssh connection closed: %w", closedReason(err))
		case <-tick.C:
		}
		if err := Ping(ctx, conn, timeout); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			conn.Close()
			return err
		}
	}
}

// closedReason names why a connection ended; Wait gives nil for a clean
// close by the peer.
func closedReason(err error) error {
	if err == nil {
		return errClosedByPeer
	}
	return err
}

var (
	// errNoReply is the keepalive failure when the server does not answer.
	errNoReply = errors.New("no reply")
	// errClosedByPeer is the reason given for a connection closed without error.
	errClosedByPeer = errors.New("closed")
)
