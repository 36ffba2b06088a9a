package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// tunnelDialTimeout bounds the connect to a unix socket whose listener is
// stuck with a full backlog.
const tunnelDialTimeout = 5 * time.Second

// handle checks the owner of an accepted connection and passes it on to the
// tunnel's unix socket for its port, or closes it.
func (r *Relay) handle(ctx context.Context, c *net.TCPConn, port uint16) {
	if r.dirGone.Load() {
		r.fails.record(dirGone, "port", port)
		reset(c)
		return
	}
	client := c.RemoteAddr().(*net.TCPAddr).AddrPort()
	server := c.LocalAddr().(*net.TCPAddr).AddrPort()
	uid, err := r.owners.Owner(client, server)
	if errors.Is(err, ErrNotHeld) {
		r.fails.record(notHeld, "port", port, "client", client, "error", err)
		reset(c)
		return
	}
	if err != nil {
		r.fails.record(lookupFailed, "port", port, "client", client, "error", err)
		reset(c)
		return
	}
	if uid != r.cfg.UID {
		r.fails.record(ownerRefused, "port", port, "client", client, "uid", uid)
		reset(c)
		return
	}
	path := filepath.Join(r.cfg.Dir, SocketName(port))
	u, err := dialTunnel(ctx, path, r.cfg.UID)
	if err != nil {
		r.fails.record(tunnelDown, "port", port, "error", err)
		reset(c)
		return
	}
	if err := pipe(ctx, c, u); err != nil {
		r.fails.record(copyError, "port", port, "client", client, "error", err)
	}
}

// reset closes c at once with a TCP reset, leaving no TIME_WAIT socket
// behind however often a client connects.
func reset(c *net.TCPConn) {
	c.SetLinger(0)
	c.Close()
}

// dialTunnel connects to the unix socket at path and checks that its
// listener runs as uid: a connection goes to the job user's tunnel or nowhere.
func dialTunnel(ctx context.Context, path string, uid uint32) (*net.UnixConn, error) {
	d := net.Dialer{Timeout: tunnelDialTimeout}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	u := c.(*net.UnixConn)
	peer, err := peerUID(u)
	if err != nil {
		u.Close()
		return nil, fmt.Errorf("%s: peer credentials: %w", path, err)
	}
	if peer != uid {
		u.Close()
		return nil, fmt.Errorf("%s: listener runs as uid %d, not the job's uid %d", path, peer, uid)
	}
	return u, nil
}

func peerUID(u *net.UnixConn) (uint32, error) {
	rc, err := u.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return cred.Uid, nil
}

// halfCloser is a connection whose write side can be closed alone.
type halfCloser interface {
	io.ReadWriteCloser
	CloseWrite() error
}

// pipe copies between the client and the tunnel in both directions until
// both are done, half-closing each write side on EOF. An error in one
// direction, or the end of ctx, closes both connections. The error names the
// direction it happened in.
func pipe(ctx context.Context, client, tunnel halfCloser) error {
	closeBoth := func() {
		client.Close()
		tunnel.Close()
	}
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()
	defer closeBoth()
	errc := make(chan error, 2)
	go func() { errc <- copyHalf("client to tunnel", tunnel, client) }()
	go func() { errc <- copyHalf("tunnel to client", client, tunnel) }()
	first := <-errc
	if first != nil {
		closeBoth() // unblock the other direction
	}
	second := <-errc
	switch {
	case ctx.Err() != nil:
		return nil // the relay is stopping; it closed both
	case first != nil:
		return first // the second failed because it was closed
	}
	return second
}

// copyHalf copies src to dst and closes dst's write side at EOF.
func copyHalf(direction string, dst halfCloser, src io.Reader) error {
	if _, err := io.Copy(dst, src); err != nil {
		return fmt.Errorf("copy %s: %w", direction, err)
	}
	if err := dst.CloseWrite(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("copy %s: close write: %w", direction, err)
	}
	return nil
}
