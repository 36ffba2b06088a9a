package relay

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// SockDiag finds socket owners with the kernel's socket diagnostics
// (NETLINK_SOCK_DIAG), asking for the one socket with the exact address pair
// instead of scanning every socket of the node. The zero value is ready to
// use; each lookup opens and closes its own netlink socket, so it is safe for
// concurrent use.
type SockDiag struct{}

var diagSeq atomic.Uint32

// Owner implements Owners. An IPv4 client is looked up as AF_INET and then,
// if not found, as a v4-mapped AF_INET6 socket (an IPv6 socket connected to
// the IPv4 listener, as a JVM opens by default).
func (SockDiag) Owner(client, server netip.AddrPort) (uint32, error) {
	families := []uint8{unix.AF_INET6}
	if client.Addr().Unmap().Is4() && server.Addr().Unmap().Is4() {
		families = []uint8{unix.AF_INET, unix.AF_INET6}
	}
	var err error
	for _, fam := range families {
		var m diagMsg
		if m, err = diagQuery(fam, client, server); err != nil {
			continue
		}
		var uid uint32
		uid, err = diagOwner(m, client, server)
		if err == nil || errors.Is(err, ErrNotHeld) {
			return uid, err
		}
	}
	return 0, err
}

// diagOwner is the owner of the client socket in the answer m to a lookup
// of client->server: an answer for another pair, or for a socket that is
// not a client's, is an error wrapping ErrNoSocket; one for a socket no
// longer held or established (checkHeld), an error wrapping ErrNotHeld.
func diagOwner(m diagMsg, client, server netip.AddrPort) (uint32, error) {
	if !sameAddrPort(m.local, client) || !sameAddrPort(m.remote, server) {
		return 0, fmt.Errorf("sock_diag: answer %v->%v does not match %v->%v: %w", m.local, m.remote, client, server, ErrNoSocket)
	}
	if !fullSocket(m.state) {
		return 0, fmt.Errorf("sock_diag: socket %v->%v in tcp state %d: %w", client, server, m.state, ErrNoSocket)
	}
	if err := checkHeld(client, server, m.state, uint64(m.inode)); err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	return m.uid, nil
}

// probeListener checks that the kernel answers an exact lookup for the
// listener at addr (remote address and port zero match a listening socket).
func (SockDiag) probeListener(addr netip.AddrPort) error {
	fam := uint8(unix.AF_INET6)
	zero := netip.IPv6Unspecified()
	if addr.Addr().Is4() {
		fam, zero = unix.AF_INET, netip.IPv4Unspecified()
	}
	m, err := diagQuery(fam, addr, netip.AddrPortFrom(zero, 0))
	if err != nil {
		return err
	}
	if m.state != tcpListen || !sameAddrPort(m.local, addr) {
		return fmt.Errorf("sock_diag: probe of %v found %v in tcp state %d", addr, m.local, m.state)
	}
	return nil
}

// diagQuery sends one exact SOCK_DIAG_BY_FAMILY request and reads its answer.
func diagQuery(family uint8, local, remote netip.AddrPort) (diagMsg, error) {
	seq := diagSeq.Add(1)
	req, err := encodeDiagRequest(family, local, remote, seq)
	if err != nil {
		return diagMsg{}, fmt.Errorf("sock_diag: %w", err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return diagMsg{}, fmt.Errorf("sock_diag: open netlink socket: %w", err)
	}
	defer unix.Close(fd)
	// The kernel answers at once; the timeout only guards against a netlink
	// implementation that never does.
	tv := unix.Timeval{Sec: 2}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return diagMsg{}, fmt.Errorf("sock_diag: set receive timeout: %w", err)
	}
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return diagMsg{}, fmt.Errorf("sock_diag: send request: %w", err)
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return diagMsg{}, fmt.Errorf("sock_diag: receive answer: %w", err)
		}
		m, err := parseDiagResponse(buf[:n], seq)
		if errors.Is(err, syscall.ENOENT) {
			return diagMsg{}, fmt.Errorf("sock_diag: %v->%v: %w", local, remote, ErrNoSocket)
		}
		if err != nil {
			return diagMsg{}, fmt.Errorf("sock_diag: %w", err)
		}
		return m, nil
	}
}
