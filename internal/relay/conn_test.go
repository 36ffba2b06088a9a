package relay

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, accepted *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); a.Close() })
	return c.(*net.TCPConn), a.(*net.TCPConn)
}

// unixPair returns both ends of a unix stream socket pair.
func unixPair(t *testing.T) (a, b *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

func TestPipeHalfCloses(t *testing.T) {
	client, accepted := tcpPair(t)
	tunnel, far := unixPair(t)
	done := make(chan error, 1)
	go func() { done <- pipe(context.Background(), accepted, tunnel) }()
	io.WriteString(client, "request")
	client.CloseWrite()
	far.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(far) // EOF arrives through the half-close
	if string(got) != "request" || err != nil {
		t.Fatalf("tunnel end: got %q, %v; want %q", got, err, "request")
	}
	// The other direction still flows after the first is closed.
	io.WriteString(far, "answer")
	far.CloseWrite()
	client.SetDeadline(time.Now().Add(10 * time.Second))
	got, err = io.ReadAll(client)
	if string(got) != "answer" || err != nil {
		t.Fatalf("client end: got %q, %v; want %q", got, err, "answer")
	}
	if err := <-done; err != nil {
		t.Errorf("pipe: got %v; want nil", err)
	}
}

func TestPipeErrorNamesDirection(t *testing.T) {
	client, accepted := tcpPair(t)
	tunnel, _ := unixPair(t)
	done := make(chan error, 1)
	go func() { done <- pipe(context.Background(), accepted, tunnel) }()
	client.SetLinger(0)
	client.Close() // a reset: the read from the client fails
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "copy client to tunnel") {
			t.Errorf("pipe: got %v; want an error naming client to tunnel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pipe still running 10s after the client's reset")
	}
}

func TestPipeStopsWithContext(t *testing.T) {
	_, accepted := tcpPair(t)
	tunnel, _ := unixPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipe(ctx, accepted, tunnel) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("pipe after cancel: got %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pipe still running 10s after cancel")
	}
}
