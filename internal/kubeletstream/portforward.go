package kubeletstream

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sluice-hpc/sluice/internal/pipe"
	"github.com/sluice-hpc/sluice/internal/relay"
)

// dialTimeout bounds opening one stream's channel to the node.
const dialTimeout = 30 * time.Second

// PortForward carries one port-forward stream to port on the loopback of
// the pod's batch host: a direct-tcpip channel on the node's own sshd,
// reached through the login node, or with Srun an srun step into the job
// (forwardBySrun). It returns when both directions ended
// (each half-closed when the other side reached EOF) or one failed, when
// ctx ends (the session's connection ended), or when the stream carried
// nothing for Limits.StreamIdle; a port nobody listens on is an error at
// once. The streams of a pod, of a namespace and of the node are bounded
// (Limits): one beyond is refused. The stream is read from the start
// (readAhead): one left unread stalls the connection's other streams.
func (s *Server) PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port-forward: port %d out of range", port)
	}
	if s.Conns == nil {
		return ErrNoNodeHostKeys
	}
	job, err := s.Jobs.RunningJob(namespace, pod)
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	release, err := s.streams.acquire(s.Limits.streams(), namespace, pod)
	if err != nil {
		reset(stream)
		return fmt.Errorf("port-forward: %w", err)
	}
	defer release()
	ra := newReadAhead(stream, maxReadAhead)
	defer ra.Close()
	ctx, stop := idleContext(ctx, ra, s.Limits.streamIdle())
	defer stop()
	if s.Srun != nil {
		return s.forwardBySrun(ctx, job, namespace, port, ra)
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	node, release, err := s.Conns.Node(dctx, job.Host)
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	defer release()
	conn, addr, err := dialJob(dctx, node, job.ForwardEntry, port)
	if err != nil {
		return fmt.Errorf("port-forward: %s on node %s: %w", addr, job.Host, err)
	}
	defer conn.Close()
	ra.start()
	peer := job.Host + ":" + addr
	if _, err := pipe.Relay(ctx, streamConn{ra}, conn, "client", peer, nil); err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	return nil
}

// dialJob opens a channel over node to the job's listener of port: through
// the relay's forward entry when the job has one (entry), which joins it
// only to a listener of the job's user, else to 127.0.0.1:port, whatever
// listens there. It says where the channel goes.
func dialJob(ctx context.Context, node *ssh.Client, entry string, port int32) (net.Conn, string, error) {
	if entry == "" {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
		conn, err := node.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, addr, fmt.Errorf("dial: %w", err)
		}
		return conn, addr, nil
	}
	addr := fmt.Sprintf("%s (port %d)", entry, port)
	conn, err := node.DialContext(ctx, "unix", entry)
	if err != nil {
		return nil, addr, fmt.Errorf("dial: %w", err)
	}
	if err := relay.OpenForwardContext(ctx, conn, uint16(port)); err != nil {
		return nil, addr, err
	}
	return conn, addr, nil
}

// streamConn is a port-forward stream as a net.Conn, for pipe.Relay: it
// has no addresses or deadlines, and its Close ends its write side (what
// both the SPDY and the websocket streams do).
type streamConn struct{ io.ReadWriteCloser }

// CloseWrite ends the stream's write side: the stream's own CloseWrite
// where it has one (readAhead: its Close would end its reading too), else
// its Close.
func (c streamConn) CloseWrite() error {
	if cw, ok := c.ReadWriteCloser.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

func (streamConn) LocalAddr() net.Addr              { return streamAddr{} }
func (streamConn) RemoteAddr() net.Addr             { return streamAddr{} }
func (streamConn) SetDeadline(time.Time) error      { return nil }
func (streamConn) SetReadDeadline(time.Time) error  { return nil }
func (streamConn) SetWriteDeadline(time.Time) error { return nil }

type streamAddr struct{}

func (streamAddr) Network() string { return "kubelet-stream" }
func (streamAddr) String() string  { return "kubectl" }
