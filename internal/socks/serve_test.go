package socks

import (
	"context"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// failingListener fails its first n accepts as a process out of file
// descriptors does.
type failingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestServeSurvivesAcceptErrors fails three accepts: Serve waits them out,
// logs the failure once, then serves the next connection, and returns when
// its context ends.
func TestServeSurvivesAcceptErrors(t *testing.T) {
	sink := startSink(t, "tcp4")
	ln := &failingListener{Listener: listen(t, "tcp4")}
	ln.n.Store(3)
	var log recordingLog
	s := &Server{Log: log.logger()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	client, fwd := socksClient(t, ln.Addr().String())
	c, err := client.DialContext(ctx, "tcp", sink.Addr().String())
	if err != nil {
		t.Fatalf("dial through the proxy: %v", err)
	}
	roundTrip(t, c, fwd.last())
	c.Close()
	if got := s.fails.count(failAccept); got != 3 {
		t.Errorf("accept failures: got %d; want 3", got)
	}
	if got := log.count(failureMessages[failAccept]); got != 1 {
		t.Errorf("accept failures logged: got %d; want 1", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: got %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts after Serve returned")
	}
}

// TestServeWaitsForConnections closes the listener under Serve while a
// connection is relayed: Serve returns only once that connection has
// ended.
func TestServeWaitsForConnections(t *testing.T) {
	sink := startSink(t, "tcp4")
	ln := listen(t, "tcp4")
	var served atomic.Bool
	s := &Server{Log: testLog(t), OnDone: func(Result) { served.Store(true) }}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln) }()

	client, fwd := socksClient(t, ln.Addr().String())
	c, err := client.DialContext(context.Background(), "tcp", sink.Addr().String())
	if err != nil {
		t.Fatalf("dial through the proxy: %v", err)
	}
	defer c.Close()
	ln.Close()
	select {
	case err := <-done:
		t.Fatalf("serve returned (%v) while a connection was open", err)
	case <-time.After(100 * time.Millisecond):
	}
	fwd.last().CloseWrite()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil { // the sink ends its side after ours
		t.Fatalf("read: %v", err)
	}
	c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: got %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after its last connection ended")
	}
	if !served.Load() {
		t.Error("serve returned before its connection was done")
	}
}

// TestServeEndsConnectionsWithContext ends Serve's context while a
// connection is relayed: the connection is closed and Serve returns.
func TestServeEndsConnectionsWithContext(t *testing.T) {
	sink := startSink(t, "tcp4")
	ln := listen(t, "tcp4")
	var served atomic.Bool
	s := &Server{Log: testLog(t), OnDone: func(Result) { served.Store(true) }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	client, _ := socksClient(t, ln.Addr().String())
	c, err := client.DialContext(ctx, "tcp", sink.Addr().String())
	if err != nil {
		t.Fatalf("dial through the proxy: %v", err)
	}
	defer c.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: got %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
	if !served.Load() {
		t.Error("serve returned before its connection was done")
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("client: got %v; want EOF", err)
	}
}
