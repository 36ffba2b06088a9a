package relay

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
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

// BenchmarkForwardSetup opens a connection to a listener of this user and
// takes one byte through it: directly over TCP, and through the relay's
// forward entry (header, listener lookup, connect, accepted-socket check).
func BenchmarkForwardSetup(b *testing.B) {
	addr := testAddr()
	ln, err := net.Listen("tcp4", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Held until the client closes: a server that closes at
			// once is refused (checkAccepted cannot tell whose it was).
			go func() {
				c.Write([]byte{1})
				io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	server := ln.Addr().(*net.TCPAddr).AddrPort()
	dir := b.TempDir()
	r, err := Listen(Config{Addr: addr, Dir: dir, UID: uint32(os.Getuid()), Forward: true, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Serve(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	oneByte := func(b *testing.B, c net.Conn) {
		var buf [1]byte
		if _, err := io.ReadFull(c, buf[:]); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp4", server.String())
			if err != nil {
				b.Fatal(err)
			}
			oneByte(b, c)
		}
	})
	b.Run("entry", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("unix", filepath.Join(dir, ForwardSocket))
			if err != nil {
				b.Fatal(err)
			}
			if err := OpenForward(c, server.Port()); err != nil {
				b.Fatal(err)
			}
			oneByte(b, c)
		}
	})
}
