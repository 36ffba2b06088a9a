package relay

import (
	"fmt"
	"net/netip"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Listeners finds the listening socket a connection would reach.
type Listeners interface {
	// Listener returns the TCP listener that a connection to target would
	// reach now: one bound to target's address, or else a wildcard
	// listener on its port (0.0.0.0, or [::] taking IPv4 too). It returns
	// an error wrapping ErrNoSocket when none would.
	Listener(target netip.AddrPort) (Listener, error)
}

// Listener is a listening socket and its owner.
type Listener struct {
	Addr  netip.AddrPort // the address it is bound to, maybe a wildcard
	UID   uint32
	Inode uint64
}

var (
	_ Listeners = SockDiag{}
	_ Listeners = ProcNet{}
)

// Listener implements Listeners. An exact lookup of a listener is the
// kernel's own lookup for an arriving connection (inet_lookup), so its
// answer is the socket that a connection to target reaches, wildcard or
// not, IPv4 or dual-stack IPv6.
func (SockDiag) Listener(target netip.AddrPort) (Listener, error) {
	fam, zero := uint8(unix.AF_INET6), netip.IPv6Unspecified()
	if target.Addr().Is4() {
		fam, zero = unix.AF_INET, netip.IPv4Unspecified()
	}
	m, err := diagQuery(fam, target, netip.AddrPortFrom(zero, 0))
	if err != nil {
		return Listener{}, err
	}
	if m.state != tcpListen || m.local.Port() != target.Port() ||
		(m.local.Addr().Unmap() != target.Addr() && !m.local.Addr().IsUnspecified()) {
		return Listener{}, fmt.Errorf("sock_diag: lookup of %v found %v in tcp state %d: %w", target, m.local, m.state, ErrNoSocket)
	}
	return Listener{Addr: m.local, UID: m.uid, Inode: uint64(m.inode)}, nil
}

// Listener implements Listeners from the LISTEN sockets of /proc/net/tcp
// and tcp6, ranked as the kernel ranks them for an arriving connection:
// bound to target's address, then the IPv4 wildcard (for an IPv4 target),
// then the IPv6 wildcard. /proc does not tell whether an IPv6 wildcard
// takes IPv4 (IPV6_V6ONLY): it is taken to, and a connection then finds
// nothing if it does not.
func (p ProcNet) Listener(target netip.AddrPort) (Listener, error) {
	root := p.Root
	if root == "" {
		root = "/proc"
	}
	files := []string{"tcp6"}
	if target.Addr().Is4() {
		files = []string{"tcp", "tcp6"}
	}
	var best Listener
	bestRank := 0
	for _, name := range files {
		path := filepath.Join(root, "net", name)
		err := scanProcNet(path, func(e procEntry) bool {
			if e.state != tcpListen || e.local.Port() != target.Port() {
				return false
			}
			if r := listenerRank(e.local.Addr(), target.Addr()); r > bestRank {
				best, bestRank = Listener{Addr: e.local, UID: e.uid, Inode: e.inode}, r
			}
			return false
		})
		if err != nil {
			return Listener{}, err
		}
	}
	if bestRank == 0 {
		return Listener{}, fmt.Errorf("proc: no listener for %v: %w", target, ErrNoSocket)
	}
	return best, nil
}

// listenerRank ranks a listener bound to bound for a connection to target:
// 3 bound to target itself, 2 the IPv4 wildcard for an IPv4 target, 1 the
// IPv6 wildcard, 0 one the connection does not reach.
func listenerRank(bound, target netip.Addr) int {
	switch {
	case bound.Unmap() == target:
		return 3
	case bound == netip.IPv4Unspecified() && target.Is4():
		return 2
	case bound == netip.IPv6Unspecified():
		return 1
	}
	return 0
}

// scanProcNet calls match on every entry of the /proc/net/tcp{,6} file at
// path until it returns true. A missing file (no IPv6) is no entries.
func scanProcNet(path string, match func(procEntry) bool) error {
	f, err := openProcNet(path)
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	if _, _, err := findProcNet(f, match); err != nil {
		return fmt.Errorf("proc: read %s: %w", path, err)
	}
	return nil
}
