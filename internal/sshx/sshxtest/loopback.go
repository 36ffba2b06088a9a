package sshxtest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// SilentListener listens on a loopback port that accepts connections and
// never says a word, as a login node whose sshd hangs (an SSH handshake
// with it waits until its timeout or its context) or a job's server that
// never answers. It returns the address; the listener and its connections
// are closed when the test ends.
func SilentListener(t testing.TB) string {
	t.Helper()
	return ServeLoopback(t, func(c net.Conn) { io.Copy(io.Discard, c) })
}

// Echo is a handler for ServeLoopback that sends back what it reads and
// closes its side for writing when the peer has.
func Echo(c net.Conn) {
	io.Copy(c, c)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// ServeLoopback listens on a TCP port of 127.0.0.1, serves it as Serve
// does, and returns its address.
func ServeLoopback(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	Serve(t, ln, handle)
	return ln.Addr().String()
}

// Serve runs handle on each connection accepted on ln, in a goroutine of
// its own, closing the connection when handle returns. When the test ends,
// ln and every connection still open are closed and the handlers waited
// for.
func Serve(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open = map[net.Conn]bool{}
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(open, c)
					mu.Unlock()
					c.Close()
				}()
				handle(c)
			})
		}
	})
}
