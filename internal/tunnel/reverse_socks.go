package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/sluice-hpc/sluice/internal/socks"
	"golang.org/x/crypto/ssh"
)

// socksAddr is where the node's sshd listens for the SOCKS proxy: the
// node's own loopback, never a wildcard.
func socksAddr(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// listenSocks asks the node's sshd for a remote TCP forward of the SOCKS
// port on its 127.0.0.1.
func (s *reverseState) listenSocks(client *ssh.Client) (net.Listener, error) {
	addr := socksAddr(s.r.SocksPort)
	ln, err := client.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("remote forward %s for the SOCKS proxy (taken on the node, or AllowTcpForwarding off in its sshd?): %w", addr, err)
	}
	return ln, nil
}

// serveSocks serves SOCKS5 on ln until ctx ends or ln does.
func (s *reverseState) serveSocks(ctx context.Context, ln net.Listener, log *slog.Logger) {
	srv := &socks.Server{
		Dial:             s.socksDial,
		Log:              log,
		HandshakeTimeout: s.r.Hop.timeout(),
		OnConnect:        func(*socks.Request) { s.r.Metrics.ConnOpened(s.r.SocksPort) },
		OnDone: func(res socks.Result) {
			var ce *socks.ConnError
			switch {
			case !errors.As(res.Err, &ce) || ce.Stage >= socks.StageReply:
				s.r.Metrics.ConnClosed() // OnConnect counted it open
			case ce.Stage == socks.StageDial:
				s.r.Metrics.Refused(RefusedDial)
			}
		},
	}
	if err := srv.Serve(ctx, ln); err != nil && ctx.Err() == nil {
		log.Debug("SOCKS proxy stopped serving", "error", err)
	}
}

// socksDial dials a destination a job asked the proxy for, a name resolved
// with Reverse.Resolver as the cluster resolves it. What is checked is the
// address actually dialled, in the dialer's Control hook, after resolution:
// a name is only a name (ip6-localhost, localhost.localdomain, or any name
// whose record is 127.0.0.5 or ::ffff:127.0.0.1), so checking it would let
// the shadow's own ports through (see destGuard).
func (s *reverseState) socksDial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.r.Hop.timeout())
	defer cancel()
	d := &net.Dialer{Resolver: s.r.Resolver, Control: s.r.socksGuard.control}
	return d.DialContext(ctx, network, addr)
}

// destGuard refuses the destinations of the SOCKS proxy that are the shadow
// pod itself: the proxy is for the cluster's Services, not for the pod's own
// ports (the tunnel's metrics, the kept containers'), which a loopback
// address reaches, an unspecified one (0.0.0.0/8, ::) too, and so does any
// address of the pod's own interfaces (its pod IP). Addresses are compared
// unmapped: ::ffff:127.0.0.1 is 127.0.0.1.
type destGuard struct {
	// localAddrs lists the addresses of the pod's interfaces. If nil,
	// net.InterfaceAddrs.
	localAddrs func() ([]net.Addr, error)
}

// control is a net.Dialer Control hook: it sees every address the dialer is
// about to connect to, once resolved, and refuses with an error wrapping
// socks.ErrNotAllowed those of the pod itself. It refuses too when the
// pod's addresses cannot be listed.
func (g destGuard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%s: not an address: %w", address, socks.ErrNotAllowed)
	}
	a := ap.Addr().Unmap().WithZone("")
	switch {
	case a.IsLoopback():
		return fmt.Errorf("%s is a loopback address: %w", address, socks.ErrNotAllowed)
	case a.IsUnspecified() || a.Is4() && a.As4()[0] == 0:
		return fmt.Errorf("%s is an unspecified address: %w", address, socks.ErrNotAllowed)
	}
	list := g.localAddrs
	if list == nil {
		list = net.InterfaceAddrs
	}
	addrs, err := list()
	if err != nil {
		return fmt.Errorf("%s: cannot list the pod's own addresses to refuse them: %v: %w", address, err, socks.ErrNotAllowed)
	}
	for _, la := range addrs {
		if p, err := netip.ParsePrefix(la.String()); err == nil && p.Addr().Unmap().WithZone("") == a {
			return fmt.Errorf("%s is an address of the shadow pod itself: %w", address, socks.ErrNotAllowed)
		}
	}
	return nil
}
