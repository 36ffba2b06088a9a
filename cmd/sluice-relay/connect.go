package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/sluice-hpc/sluice/internal/pipe"
	"github.com/sluice-hpc/sluice/internal/relay"
)

// exitRefused is --connect's status when nothing listens at the address,
// or only another user's listener does.
const exitRefused = 4

// connectTimeout bounds --connect's dial.
const connectTimeout = 10 * time.Second

// connectAddr checks --connect's address: a loopback IP and a port, the
// only place sluice's port-forward reaches on a node.
func connectAddr(s string) (string, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return "", fmt.Errorf("--connect: %w", err)
	}
	if !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return "", fmt.Errorf("--connect: %s is not a loopback address with a port", s)
	}
	return ap.String(), nil
}

// connect joins in and out to a TCP connection to addr: kubectl
// port-forward's end of one stream on the node, carried by srun's standard
// streams. The end of in half-closes the connection; the end of the
// connection's far side ends connect, whether in ended or not: srun passes
// on the end of a task's output only when the task exits, so a relay
// waiting for the end of its input would hold the client, which waits for
// the end of the server's answer. Nothing passes until the socket that
// accepted the connection is found to be uid's, the job user's: another
// user of the node may hold the port on its loopback. It returns the exit
// status.
func connect(ctx context.Context, addr string, uid uint32, in io.Reader, out io.Writer, stderr io.Writer) int {
	d := net.Dialer{Timeout: connectTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, "sluice-relay:", err)
		if errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
			return exitFailed
		}
		return exitRefused
	}
	defer conn.Close()
	if err := relay.CheckAccepted(ctx, conn.(*net.TCPConn), uid); err != nil {
		fmt.Fprintln(stderr, "sluice-relay:", err)
		return exitRefused
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	up := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, in)
		if err == nil {
			err = pipe.CloseWrite(conn)
		}
		up <- err
	}()
	if _, err := io.Copy(out, conn); err != nil {
		fmt.Fprintf(stderr, "sluice-relay: copy %s to stdout: %v\n", addr, err)
		return exitFailed
	}
	select {
	case err := <-up:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			fmt.Fprintf(stderr, "sluice-relay: copy stdin to %s: %v\n", addr, err)
			return exitFailed
		}
	default: // the server ended first: its answer is complete
	}
	return 0
}
