package relay

import (
	"errors"
	"net/netip"
)

// Owners finds which user owns the client end of a TCP connection.
type Owners interface {
	// Owner returns the uid owning the TCP socket whose local address is
	// client and whose remote address is server: the socket that connected
	// to a listener at server. It returns an error wrapping ErrNoSocket when
	// no such socket is open.
	Owner(client, server netip.AddrPort) (uint32, error)
}

// ErrNoSocket is returned (wrapped) when no open socket has the asked address
// pair, as when the client has already closed it.
var ErrNoSocket = errors.New("no such socket")

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

// ownedState reports whether a socket in state st is a full socket of a
// connecting client whose owner the kernel reports. Listeners, time-wait and
// request sockets report uid 0 or someone else's socket, so they never count.
func ownedState(st uint8) bool {
	switch st {
	case tcpEstablished, tcpSynSent, tcpFinWait1, tcpFinWait2, tcpCloseWait, tcpLastAck, tcpClosing:
		return true
	}
	return false
}

// DetectOwners returns SockDiag when the kernel answers socket diagnostics
// for probe, a TCP listener of this process, and ProcNet otherwise (a kernel
// without inet_diag, or a sandbox that refuses netlink). The name says which.
func DetectOwners(probe netip.AddrPort) (Owners, string) {
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
