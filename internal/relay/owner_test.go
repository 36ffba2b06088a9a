package relay

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

type ownerFunc func(client, server netip.AddrPort) (uint32, error)

func (f ownerFunc) Owner(client, server netip.AddrPort) (uint32, error) { return f(client, server) }

// TestOwnerLookup connects sockets owned by the rig's users to a listener
// (IPv4, IPv6, and v4-mapped IPv6 to an IPv4 listener) and looks up their
// owner from the accepted end, as the relay does, with each method.
func TestOwnerLookup(t *testing.T) {
	users := loadUsers(t)
	v4 := testAddr()
	cases := []struct {
		name   string
		listen netip.Addr
		mapped bool
	}{
		{"ipv4", v4, false},
		{"ipv6", netip.IPv6Loopback(), false},
		{"v4-mapped", v4, true},
	}
	methods := []struct {
		name   string
		owners Owners
	}{
		{"sock_diag", SockDiag{}},
		{"proc", ProcNet{}},
		// The AF_INET6 query alone, which the v4-mapped case also answers.
		{"sock_diag-inet6", ownerFunc(func(client, server netip.AddrPort) (uint32, error) {
			m, err := diagQuery(unix.AF_INET6, client, server)
			return m.uid, err
		})},
	}
	for _, tc := range cases {
		network := "tcp4"
		if tc.listen.Is6() {
			network = "tcp6"
		}
		ln, err := net.Listen(network, netip.AddrPortFrom(tc.listen, 0).String())
		if err != nil {
			t.Fatalf("%s: listen: %v", tc.name, err)
		}
		defer ln.Close()
		server := ln.Addr().(*net.TCPAddr).AddrPort()
		for _, who := range []account{users.alice, users.bob} {
			client, err := dialAs(who.uid, server, tc.mapped)
			if err != nil {
				t.Fatalf("%s: dial as %s: %v", tc.name, who.name, err)
			}
			defer client.Close()
			accepted, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer accepted.Close()
			server, peer := addrPorts(accepted)
			if tc.mapped && !peer.Addr().Is4() {
				t.Errorf("%s: v4-mapped client seen by an IPv4 listener as %v; want an IPv4 address", tc.name, peer)
			}
			for _, m := range methods {
				got, err := m.owners.Owner(peer, server)
				if err != nil {
					t.Errorf("%s/%s/%s: Owner(%v, %v): %v", tc.name, m.name, who.name, peer, server, err)
					continue
				}
				if got != who.uid {
					t.Errorf("%s/%s/%s: Owner(%v, %v) = %d; want %d", tc.name, m.name, who.name, peer, server, got, who.uid)
				}
			}
		}
	}
}

// TestOwnerLookupMissing looks up an address pair no socket has.
func TestOwnerLookupMissing(t *testing.T) {
	ln, err := net.Listen("tcp4", netip.AddrPortFrom(testAddr(), 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	server := ln.Addr().(*net.TCPAddr).AddrPort()
	client := netip.AddrPortFrom(server.Addr(), 1) // nothing connects from port 1
	for _, o := range []Owners{SockDiag{}, ProcNet{}} {
		uid, err := o.Owner(client, server)
		if !errors.Is(err, ErrNoSocket) {
			t.Errorf("%T.Owner(%v, %v) = %d, %v; want ErrNoSocket", o, client, server, uid, err)
		}
	}
	// The listener itself answers the probe, so sock_diag is picked.
	if _, how := DetectOwners(server); how != "sock_diag" {
		t.Errorf("DetectOwners(%v) picked %s; want sock_diag", server, how)
	}
	if _, how := DetectOwners(client); how != "proc" {
		t.Errorf("DetectOwners(%v) (no listener) picked %s; want proc", client, how)
	}
}
