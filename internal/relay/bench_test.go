package relay

import (
	"net"
	"net/netip"
	"os"
	"testing"
)

// BenchmarkOwnerLookup looks up the owner of one client socket while 10,000
// other TCP sockets are open (5,000 connections, both ends), with the exact
// sock_diag lookup and with the /proc/net/tcp{,6} scan.
func BenchmarkOwnerLookup(b *testing.B) {
	const others = 10_000
	ln, err := net.Listen("tcp4", netip.AddrPortFrom(testAddr(), 0).String())
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	server := ln.Addr().(*net.TCPAddr).AddrPort()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range others / 2 {
		c, err := net.Dial("tcp4", server.String())
		if err != nil {
			b.Fatalf("open %d sockets: %v", len(conns), err)
		}
		a, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c, a)
	}
	// The socket looked up: the last connection, as seen by the listener.
	srv, client := addrPorts(conns[len(conns)-1])
	want := uint32(os.Geteuid())
	for _, m := range []struct {
		name   string
		owners Owners
	}{{"sock_diag", SockDiag{}}, {"proc", ProcNet{}}} {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				uid, err := m.owners.Owner(client, srv)
				if err != nil || uid != want {
					b.Fatalf("Owner(%v, %v) = %d, %v; want %d", client, srv, uid, err, want)
				}
			}
		})
	}
}
