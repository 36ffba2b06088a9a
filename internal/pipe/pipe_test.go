package pipe

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// tcpPair returns the two ends of a TCP connection on loopback.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

type relayResult struct {
	n   Counts
	err error
}

// startRelay relays between two TCP pairs: it returns the client's end, the
// far end, and the relay's outcome.
func startRelay(t *testing.T, ctx context.Context) (client, far *net.TCPConn, done chan relayResult) {
	t.Helper()
	client, a := tcpPair(t)
	b, far := tcpPair(t)
	done = make(chan relayResult, 1)
	go func() {
		n, err := Relay(ctx, a, b, "client", "far", nil)
		done <- relayResult{n, err}
	}()
	return client, far, done
}

func wait(t *testing.T, done chan relayResult) relayResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("relay did not end within 10s")
		return relayResult{}
	}
}

func TestHalfClose(t *testing.T) {
	client, far, done := startRelay(t, t.Context())
	client.SetDeadline(time.Now().Add(10 * time.Second))
	far.SetDeadline(time.Now().Add(10 * time.Second))
	up := make([]byte, 1<<20)
	down := make([]byte, 1<<20+17)
	rand.Read(up)
	rand.Read(down)

	// The far side reads everything up to EOF before it answers: that only
	// ends if the client's half-close is carried over.
	farGot := make(chan []byte, 1)
	go func() {
		got, err := io.ReadAll(far)
		if err != nil {
			t.Errorf("far read: %v", err)
		}
		farGot <- got
		far.Write(down)
		far.CloseWrite()
	}()
	if _, err := client.Write(up); err != nil {
		t.Fatal(err)
	}
	client.CloseWrite()
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatalf("client read: %v", err)
	}
	if !bytes.Equal(<-farGot, up) {
		t.Error("far side got other bytes than the client sent")
	}
	if !bytes.Equal(got, down) {
		t.Errorf("client got %d bytes; want the %d the far side sent", len(got), len(down))
	}
	r := wait(t, done)
	if r.err != nil {
		t.Errorf("relay error = %v; want nil", r.err)
	}
	if r.n.AToB != int64(len(up)) || r.n.BToA != int64(len(down)) {
		t.Errorf("relayed %d up, %d down; want %d, %d", r.n.AToB, r.n.BToA, len(up), len(down))
	}
}

func TestErrorNamesDirection(t *testing.T) {
	client, far, done := startRelay(t, t.Context())
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(far, buf); err != nil {
		t.Fatal(err)
	}
	// A reset from the far side fails the far-to-client direction.
	far.SetLinger(0)
	far.Close()
	r := wait(t, done)
	if r.err == nil || !strings.Contains(r.err.Error(), "copy far to client") {
		t.Errorf("relay error = %v; want one naming \"copy far to client\"", r.err)
	}
	if r.err != nil && strings.Contains(r.err.Error(), "copy client to far") {
		t.Errorf("relay error = %v; want only the failed direction", r.err)
	}
	// The client's connection was closed by the relay.
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := client.Read(buf); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Errorf("client read after the failure = %v; want EOF or a reset", err)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	client, _, done := startRelay(t, ctx)
	cancel()
	r := wait(t, done)
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("relay error = %v; want context.Canceled", r.err)
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("client read after cancel = %v; want EOF", err)
	}
}

// A connection without CloseWrite (net.Pipe) is closed whole when its
// direction ends, so the peer still sees EOF.
func TestWithoutCloseWrite(t *testing.T) {
	client, a := net.Pipe()
	b, far := net.Pipe()
	done := make(chan relayResult, 1)
	go func() {
		n, err := Relay(t.Context(), a, b, "client", "far", nil)
		done <- relayResult{n, err}
	}()
	go func() {
		client.Write([]byte("ping"))
		client.Close()
	}()
	got, err := io.ReadAll(far)
	if string(got) != "ping" || err != nil {
		t.Errorf("far read = %q, %v; want \"ping\", nil", got, err)
	}
	far.Close()
	r := wait(t, done)
	if r.n.AToB != 4 {
		t.Errorf("sent = %d; want 4", r.n.AToB)
	}
}
