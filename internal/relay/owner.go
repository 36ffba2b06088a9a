package relay

import (
	"errors"
	"fmt"
	"net/netip"
)

// Owners finds which user owns the client end of a TCP connection.
type Owners interface {
	// Owner returns the uid owning the TCP socket whose local address is
	// client and whose remote address is server: the socket that connected
	// to a listener at server. It returns an error wrapping ErrNoSocket when
	// no such socket is open, and one wrapping ErrNotHeld when its process
	// has closed it or it is no longer established.
	Owner(client, server netip.AddrPort) (uint32, error)
}

// ErrNoSocket is returned (wrapped) when no open socket has the asked address
// pair, as when the client has already closed it.
var ErrNoSocket = errors.New("no such socket")

// ErrNotHeld is returned (wrapped) when the socket with the asked address
// pair is no longer held by its process, or no longer established: its
// owner as the kernel reports it cannot be trusted (see checkHeld).
var ErrNotHeld = errors.New("socket not held by a process")

var (
	_ Owners = SockDiag{}
	_ Owners = ProcNet{}
)

// TCP states as the kernel numbers them (include/net/tcp_states.h).
const (
	tcpEstablished = 1
	tcpSynSent     = 2
	tcpFinWait1    = 4
	tcpFinWait2    = 5
	tcpCloseWait   = 8
	tcpLastAck     = 9
	tcpListen      = 10
	tcpClosing     = 11
)

// fullSocket reports whether a socket in state st is a full socket of a
// connecting client, which lookups match. Listeners, time-wait and request
// sockets report uid 0 or someone else's socket, so they never count.
func fullSocket(st uint8) bool {
	switch st {
	case tcpEstablished, tcpSynSent, tcpFinWait1, tcpFinWait2, tcpCloseWait, tcpLastAck, tcpClosing:
		return true
	}
	return false
}

// checkHeld accepts the answer of a lookup only for a client socket that
// its process still holds, whose owner the kernel then reports truly:
//
//   - its inode is not 0. A socket its process has closed (an orphan, as
//     after connect, write, close) has no inode, and the kernel reports
//     uid 0 for it (sock_i_uid of a socket with no file): without this
//     check, any user's closed connection would pass as root's.
//   - it is established, or half-closed by the client (FIN-WAIT-1 or 2:
//     shutdown(SHUT_WR) after a request, as nc -N does within microseconds
//     of connecting; the inode shows the client still holds it). Any other
//     state is a connection that is over: the relay has not closed its end,
//     so the client cannot have seen a FIN (CLOSE-WAIT, LAST-ACK, CLOSING),
//     and SYN-SENT cannot have been accepted.
func checkHeld(client, server netip.AddrPort, state uint8, inode uint64) error {
	switch {
	case inode == 0:
		return fmt.Errorf("socket %v->%v is closed by its process (inode 0, tcp state %d): %w", client, server, state, ErrNotHeld)
	case state != tcpEstablished && state != tcpFinWait1 && state != tcpFinWait2:
		return fmt.Errorf("socket %v->%v is no longer established (tcp state %d): %w", client, server, state, ErrNotHeld)
	}
	return nil
}

// Sockets finds the owners of clients and of listeners.
type Sockets interface {
	Owners
	Listeners
}

// DetectOwners returns SockDiag when the kernel answers socket diagnostics
// for probe, a TCP listener of this process, and ProcNet otherwise (a kernel
// without inet_diag, or a sandbox that refuses netlink). The name says which.
func DetectOwners(probe netip.AddrPort) (Sockets, string) {
	if err := (SockDiag{}).probeListener(probe); err == nil {
		return SockDiag{}, "sock_diag"
	}
	return ProcNet{}, "proc"
}

// sameAddrPort compares two addresses as IPv4 when they are v4-mapped, since a
// v4-mapped IPv6 client and an IPv4 client are the same connection.
func sameAddrPort(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}
