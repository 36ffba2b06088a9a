package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"

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
		log.Debug("SOCKS proxy stopped serving", "err", err)
	}
}

// socksDial dials a destination a job asked the proxy for. Loopback and
// unspecified addresses, and localhost, are refused: the proxy is for the
// cluster's Services, not for the shadow pod's own ports (the tunnel's
// metrics, the kept containers'). A name is dialled as the cluster resolves
// it.
func (s *reverseState) socksDial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if notAllowed(host) {
		return nil, fmt.Errorf("%s: %w", addr, socks.ErrNotAllowed)
	}
	ctx, cancel := context.WithTimeout(ctx, s.r.Hop.timeout())
	defer cancel()
	if s.r.Dial != nil {
		return s.r.Dial(ctx, network, addr)
	}
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

// notAllowed tells whether host is a loopback or unspecified address, or
// localhost.
func notAllowed(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		return a.IsLoopback() || a.IsUnspecified()
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}
