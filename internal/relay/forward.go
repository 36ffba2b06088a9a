package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

const (
	// headerTimeout bounds the wait for a forward header.
	headerTimeout = 10 * time.Second
	// replyTimeout bounds the write of the answer line.
	replyTimeout = 10 * time.Second
	// jobDialTimeout bounds the connect to the job's listener, whose
	// backlog may be full.
	jobDialTimeout = 5 * time.Second
	// acceptTimeout bounds the wait for the job to accept the connection,
	// which the relay checks before it passes on a byte.
	acceptTimeout = 5 * time.Second
)

var localhost4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// refusal is why a forward is refused: the kind counted and logged, and
// the reason the tunnel is told.
type refusal struct {
	kind   failureKind
	reason string
}

func (e *refusal) Error() string { return e.reason }

func refuse(k failureKind, format string, args ...any) *refusal {
	return &refusal{kind: k, reason: fmt.Sprintf(format, args...)}
}

// handleForward serves one connection to the forward entry: a header naming
// the pod's port, then, once the job's listener for it is found and has
// accepted, the job's connection.
func (r *Relay) handleForward(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	if peer, err := peerUID(c); err != nil || peer != r.cfg.UID {
		// Only the job's user reaches the directory: this is not the tunnel.
		r.fails.record(forwardPeer, "uid", peer, "error", err)
		return
	}
	c.SetReadDeadline(time.Now().Add(headerTimeout))
	job, rf := r.openForward(ctx, c)
	// The answer's own time: the connect and the accept took theirs.
	c.SetDeadline(time.Now().Add(replyTimeout))
	if rf != nil {
		r.fails.record(rf.kind, "reason", rf.reason)
		refuseConn(c, rf.reason, rf.kind == forwardOwner || rf.kind == forwardPortFile)
		return
	}
	if _, err := c.Write([]byte(replyOK + "\n")); err != nil {
		job.Close()
		return
	}
	c.SetDeadline(time.Time{})
	if err := pipe(ctx, c, job); err != nil {
		r.fails.record(copyError, "forward", job.RemoteAddr(), "error", err)
	}
}

// refuseConn writes the refusal line to c and ends its write side, then
// reads what the client sent, for a moment: a unix socket closed with bytes
// unread resets the connection, and the client could lose the line.
func refuseConn(c *net.UnixConn, reason string, report bool) {
	if _, err := c.Write(refusalLine(reason, report)); err != nil {
		return
	}
	c.CloseWrite()
	c.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// openForward reads the header from c and connects to the job's listener
// for the port it names.
func (r *Relay) openForward(ctx context.Context, c io.Reader) (*net.TCPConn, *refusal) {
	if r.dirGone.Load() {
		return nil, refuse(dirGone, "the socket directory is gone")
	}
	var hdr [forwardHeaderLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return nil, refuse(forwardBadHeader, "forward header: %v", err)
	}
	declared, err := ParseForwardHeader(hdr[:])
	if err != nil {
		return nil, refuse(forwardBadHeader, "%v", err)
	}
	port := declared
	what := fmt.Sprintf("port %d", declared)
	if r.cfg.PortFile != "" {
		m, err := readPortFile(r.cfg.PortFile, r.cfg.UID)
		if err != nil {
			return nil, refuse(forwardPortFile, "%s: %v", what, err)
		}
		if port = m.Actual(declared); port != declared {
			what = fmt.Sprintf("port %d (%d in the port file)", declared, port)
		}
	}
	target, rf := r.jobListener(port, what)
	if rf != nil {
		return nil, rf
	}
	d := net.Dialer{Timeout: jobDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", target.String())
	if err != nil {
		return nil, refuse(forwardDial, "%s: connect %v: %v", what, target, err)
	}
	job := conn.(*net.TCPConn)
	if rf := r.checkAccepted(ctx, job, what); rf != nil {
		reset(job)
		return nil, rf
	}
	return job, nil
}

// jobListener picks the address to connect to for port: the first of the
// pod's own address, 127.0.0.1 and [::1] whose connection reaches a listener
// of the job's user (bound there or a wildcard). A listener of another user
// that a connection to one of them would reach is passed over; if no
// address reaches the job, the refusal names the first such listener.
func (r *Relay) jobListener(port uint16, what string) (netip.AddrPort, *refusal) {
	var other *Listener
	var lookupErr error
	for _, a := range []netip.Addr{r.cfg.Addr.Unmap(), localhost4, netip.IPv6Loopback()} {
		target := netip.AddrPortFrom(a, port)
		l, err := r.lookup.Listener(target)
		switch {
		case errors.Is(err, ErrNoSocket):
		case err != nil:
			lookupErr = err
		case l.UID == r.cfg.UID:
			return target, nil
		case other == nil:
			other = &l
		}
	}
	switch {
	case other != nil:
		return netip.AddrPort{}, refuse(forwardOwner, "%s: listener %v owned by uid %d, not the job's uid %d", what, other.Addr, other.UID, r.cfg.UID)
	case lookupErr != nil:
		return netip.AddrPort{}, refuse(lookupFailed, "%s: listener lookup: %v", what, lookupErr)
	}
	return netip.AddrPort{}, refuse(forwardNoListener, "%s: nothing listens on %v, 127.0.0.1 or [::1]", what, r.cfg.Addr.Unmap())
}

// checkAccepted waits until the job has accepted c and checks that the
// socket holding its end is the job user's. The listener checked before
// the connect may have gone and another user's taken the address since:
// the accepted socket is what receives the bytes.
func (r *Relay) checkAccepted(ctx context.Context, c *net.TCPConn, what string) *refusal {
	return awaitAccepted(ctx, r.owners, c, r.cfg.UID, what)
}

// CheckAccepted waits until the listener c connected to has accepted it and
// checks that the socket holding its end is uid's, for a connection made
// without the relay's listener lookup (sluice-relay --connect): whoever
// listens on the node's loopback may be another user. It returns an error
// saying why otherwise; nothing must be written to c before.
func CheckAccepted(ctx context.Context, c *net.TCPConn, uid uint32) error {
	// The probe finds the lookup the kernel answers, as Listen does.
	probe, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return fmt.Errorf("probe owner lookup: %w", err)
	}
	owners, _ := DetectOwners(probe.Addr().(*net.TCPAddr).AddrPort())
	probe.Close()
	if rf := awaitAccepted(ctx, owners, c, uid, "connect"); rf != nil {
		return rf
	}
	return nil
}

// awaitAccepted is checkAccepted with owners and uid given.
func awaitAccepted(ctx context.Context, owners Owners, c *net.TCPConn, uid uint32, what string) *refusal {
	local, remote := c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
	deadline := time.Now().Add(acceptTimeout)
	delay := 20 * time.Microsecond
	for {
		// The job's end has remote as its local address.
		owner, err := owners.Owner(remote, local)
		switch {
		case err == nil && owner == uid:
			return nil
		case err == nil:
			return refuse(forwardOwner, "%s: connection to %v accepted by uid %d, not the job's uid %d", what, remote, owner, uid)
		case !errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrNoSocket):
			return refuse(lookupFailed, "%s: owner of the accepted connection: %v", what, err)
		case time.Now().After(deadline):
			return refuse(forwardNotAccepted, "%s: the listener on %v did not accept within %v (or closed at once)", what, remote, acceptTimeout)
		}
		select {
		case <-ctx.Done():
			return refuse(forwardNotAccepted, "%s: the relay is stopping", what)
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}
