package tunnel

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"
)

// The socket directory's care, as the gateway takes it for its shadows
// (internal/gateway): the same scripts as a reverse session's, run on a
// connection to the node's sshd that the gateway holds for many pods.

// PrepareSocketDir makes sure dir exists on the node client reaches, owned
// by the session's user and writable by no one else, and returns its inode.
func PrepareSocketDir(ctx context.Context, client *ssh.Client, dir string) (string, error) {
	out, err := runNode(ctx, client, prepareCommand(dir), nil)
	if err != nil {
		return "", fmt.Errorf("socket directory %s: %w", dir, err)
	}
	d, err := parseSocketDir(out)
	if err == nil {
		err = d.check()
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	return d.inode, nil
}

// ClearSockets removes the sockets named names left in dir, whose inode
// must still be inode: the node's sshd does not bind over them.
func ClearSockets(ctx context.Context, client *ssh.Client, dir, inode string, names ...string) error {
	cmd := shellCommand(clearScript, append([]string{dir, inode}, names...)...)
	if _, err := runNode(ctx, client, cmd, nil); err != nil {
		return fmt.Errorf("remove stale sockets in %s: %w", dir, err)
	}
	return nil
}

// HoldSocketDir runs the holder on dir (with inode) until it ends, the
// connection does or ctx ends; held is closed once the holder reports the
// directory held. It returns why it ended: the holder's reason wraps
// ErrHoldEnded.
func HoldSocketDir(ctx context.Context, client *ssh.Client, dir, inode string, held chan<- struct{}) error {
	sess, err := client.NewSession()
	if err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	var stderr bytes.Buffer
	sess.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	if err := sess.Start(holdCommand(dir, inode, nil)); err != nil {
		return fmt.Errorf("holder: start: %w", err)
	}
	reason := readHolder(stdout, held)
	err = sess.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if reason != "" {
		return fmt.Errorf("%w: %s", ErrHoldEnded, reason)
	}
	return holderFailed(err, stderr.String())
}

// ErrHoldEnded is wrapped by the error of a holder that ended on the node:
// the socket directory is gone or was replaced (a requeue).
var ErrHoldEnded = errHoldEnded

// runNode runs cmd in a session of its own on client, with stdin as its
// standard input, and returns its standard output; ctx ending closes the
// session.
func runNode(ctx context.Context, client *ssh.Client, cmd string, stdin io.Reader) (string, error) {
	sess, err := client.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	sess.Stdin = stdin
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	var stdout, stderr bytes.Buffer
	sess.Stdout = &limitedBuffer{buf: &stdout, max: 64 << 10}
	sess.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	err = sess.Run(cmd)
	if ctx.Err() != nil {
		return "", context.Cause(ctx)
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return stdout.String(), nil
}
