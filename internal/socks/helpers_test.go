package socks

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testLog is a logger writing to t.Logf.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, nil))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Logf("%s", bytes.TrimSuffix(p, []byte("\n")))
	return len(p), nil
}

// recordingLog keeps the messages logged, for tests that count them.
type recordingLog struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recordingLog) logger() *slog.Logger {
	return slog.New(recordingHandler{r})
}

func (r *recordingLog) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

type recordingHandler struct{ r *recordingLog }

func (h recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h recordingHandler) Handle(_ context.Context, rec slog.Record) error {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.msgs = append(h.r.msgs, rec.Message)
	return nil
}

// listen listens on a loopback address of network "tcp4" or "tcp6",
// skipping the test if there is none.
func listen(t *testing.T, network string) net.Listener {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "tcp6" {
		addr = "[::1]:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		if network == "tcp6" {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// startServer runs s.Serve on a listener of its own, with a test logger
// unless s has one, and returns the listener's address. The test's cleanup
// stops the server and waits for Serve to return.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	return serveOn(t, s, listen(t, "tcp4"))
}

func serveOn(t *testing.T, s *Server, ln net.Listener) string {
	t.Helper()
	if s.Log == nil {
		s.Log = testLog(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: got %v; want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("serve did not return after its context ended")
		}
	})
	return ln.Addr().String()
}

// startSink starts a destination that reads everything a connection sends
// until EOF and only then sends it all back and half-closes: a relay that
// does not pass on a half-close on both ways never completes with it.
func startSink(t *testing.T, network string) net.Listener {
	t.Helper()
	ln := listen(t, network)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				data, err := io.ReadAll(c)
				if err != nil {
					return
				}
				c.Write(data)
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, c) // until the client closes
			}()
		}
	}()
	return ln
}

// refusingAddr returns the address of a TCP socket bound on 127.0.0.1
// that does not listen: connections to it are refused for as long as the
// test runs, with no race for a free port.
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("getsockname: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

// dialRaw connects to addr for a client that writes bytes by hand.
func dialRaw(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c.(*net.TCPConn)
}

// readToEOF reads from c until EOF, and fails the test on any other end
// (a reset among them).
func readToEOF(t *testing.T, c net.Conn) []byte {
	t.Helper()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: got %v after % x; want EOF", err, b)
	}
	return b
}
