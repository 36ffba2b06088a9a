package sshxtest

import (
	"net"
	"testing"
)

// SilentListener listens on a loopback port that accepts connections and
// never says a word, as a login node whose sshd hangs (an SSH handshake
// with it waits until its timeout or its context) or a job's server that
// never answers. It returns the address; the listener and its connections
// are closed when the test ends.
func SilentListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().String()
}
