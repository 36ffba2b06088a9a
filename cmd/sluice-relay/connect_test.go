package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

func TestConnectAddr(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:8080": "127.0.0.1:8080", "[::1]:22": "[::1]:22", "127.9.9.9:1": "127.9.9.9:1"} {
		if got, err := connectAddr(in); err != nil || got != want {
			t.Errorf("connectAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "10.0.0.1:80", "localhost:80", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", "[::]:80", "0.0.0.0:80"} {
		if got, err := connectAddr(bad); err == nil {
			t.Errorf("connectAddr(%q) = %q; want an error", bad, got)
		}
	}
}

func FuzzConnectAddr(f *testing.F) {
	f.Add("127.0.0.1:8080")
	f.Add("[::1]:1")
	f.Add("1.2.3.4:5")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := connectAddr(s)
		if err != nil {
			return
		}
		ap, perr := netip.ParseAddrPort(got)
		if perr != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
			t.Errorf("connectAddr(%q) = %q: not a loopback address with a port", s, got)
		}
	})
}

// TestConnectCarriesBothWays: what comes on stdin reaches the server, its
// EOF too (half-close), and the server's answer comes out on stdout.
func TestConnectCarriesBothWays(t *testing.T) {
	addr := serveOnce(t, func(c net.Conn) {
		b, _ := io.ReadAll(c) // until the relay half-closes
		c.Write([]byte("got " + string(b)))
	})
	var out bytes.Buffer
	var stderr strings.Builder
	code := connect(context.Background(), addr, me, strings.NewReader("hello"), &out, &stderr)
	if code != 0 || out.String() != "got hello" {
		t.Errorf("got exit %d, stdout %q (stderr %q); want 0 and %q", code, out.String(), stderr.String(), "got hello")
	}
}

func TestConnectRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var stderr strings.Builder
	code := connect(context.Background(), addr, me, strings.NewReader(""), io.Discard, &stderr)
	if code != exitRefused || !strings.Contains(stderr.String(), "refused") {
		t.Errorf("got exit %d, %q; want %d and the refusal", code, stderr.String(), exitRefused)
	}
}

// TestConnectEndsWithTheServer: the server's end of the connection ends
// the relay although its input stays open, as kubectl's stream does while
// its client waits for the end of the answer.
func TestConnectEndsWithTheServer(t *testing.T) {
	addr := serveOnce(t, func(c net.Conn) {
		buf := make([]byte, 3)
		io.ReadFull(c, buf)
		c.Write([]byte("answer to " + string(buf)))
	})
	in, w := io.Pipe() // never closed
	defer w.Close()
	go w.Write([]byte("GET"))
	var out bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- connect(context.Background(), addr, me, in, &out, io.Discard) }()
	select {
	case code := <-done:
		if code != 0 || out.String() != "answer to GET" {
			t.Errorf("got exit %d, %q; want 0 and the answer", code, out.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the relay went on 5s after the server ended the connection")
	}
}

// serveOnce listens on 127.0.0.1, hands its first connection to handle
// and closes it after; it returns the address.
func serveOnce(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		handle(c)
	}()
	return ln.Addr().String()
}

// me is the test's uid, the job's for connect.
var me = uint32(os.Getuid())

// TestConnectRefusesAnotherUsersListener: a listener on the node's
// loopback that is not the job user's (another user of a shared node bound
// the port first) gets none of the stream: connect refuses, naming the
// owner, before it passes a byte.
func TestConnectRefusesAnotherUsersListener(t *testing.T) {
	got := make(chan []byte, 1)
	addr := serveOnce(t, func(c net.Conn) {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		got <- b
		c.Write([]byte("from another user"))
	})
	var out bytes.Buffer
	var stderr strings.Builder
	code := connect(context.Background(), addr, me+1, strings.NewReader("the job's secret"), &out, &stderr)
	want := fmt.Sprintf("accepted by uid %d, not the job's uid %d", me, me+1)
	if code != exitRefused || !strings.Contains(stderr.String(), want) {
		t.Errorf("got exit %d, %q; want %d, saying %q", code, stderr.String(), exitRefused, want)
	}
	if out.Len() != 0 {
		t.Errorf("stdout got %q from a listener not the job's", out.String())
	}
	if b := <-got; len(b) != 0 {
		t.Errorf("the listener not the job's got %q", b)
	}
}
