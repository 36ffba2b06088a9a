package pipe

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

// eofCloser is a writer whose reader went away: Close says io.EOF.
type eofCloser struct{ closed bool }

func (e *eofCloser) Write(p []byte) (int, error) { return len(p), nil }
func (e *eofCloser) Close() error                { e.closed = true; return io.EOF }

func TestRWConnRelays(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		b, err := ln.Accept()
		if err != nil {
			return
		}
		got, _ := io.ReadAll(b)
		b.Write([]byte("got " + string(got)))
		b.Close()
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	out := &strings.Builder{}
	rw := &RWConn{R: io.NopCloser(strings.NewReader("from stdin")), W: nopWC{out}, Name: "stdio"}
	if _, err := Relay(context.Background(), rw, a, "stdio", "peer", nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != "got from stdin" {
		t.Errorf("got %q; want %q", out.String(), "got from stdin")
	}
	if rw.RemoteAddr().String() != "stdio" {
		t.Errorf("got address %q; want its name", rw.RemoteAddr())
	}
}

func TestRWConnCloseWriteOfAGoneReader(t *testing.T) {
	w := &eofCloser{}
	rw := &RWConn{R: io.NopCloser(strings.NewReader("")), W: w}
	if err := rw.CloseWrite(); err != nil || !w.closed {
		t.Errorf("got %v (closed %v); want it closed without error", err, w.closed)
	}
	bad := &RWConn{R: io.NopCloser(strings.NewReader("")), W: failCloser{}}
	if err := bad.CloseWrite(); err == nil {
		t.Error("got no error from a failed close")
	}
}

type nopWC struct{ io.Writer }

func (nopWC) Close() error { return nil }

type failCloser struct{}

func (failCloser) Write(p []byte) (int, error) { return len(p), nil }
func (failCloser) Close() error                { return errors.New("boom") }
