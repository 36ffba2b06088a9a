package kubeletstream

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// pipeStream is a port-forward stream whose writer (kubectl's side) blocks
// until the stream is read, as a SPDY stream's sender stalls the
// connection until the stream's data is taken.
type pipeStream struct {
	*io.PipeReader
	closed chan struct{}
}

func (p pipeStream) Write(b []byte) (int, error) { return len(b), nil }
func (p pipeStream) Close() error {
	select {
	case <-p.closed:
	default:
		close(p.closed)
	}
	return nil
}

func newPipeStream() (pipeStream, *io.PipeWriter) {
	r, w := io.Pipe()
	return pipeStream{PipeReader: r, closed: make(chan struct{})}, w
}

// written tells whether w.Write(b) returned within d.
func written(w io.Writer, b []byte, d time.Duration) bool {
	done := make(chan struct{})
	go func() { w.Write(b); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func TestReadAheadReadsBeforeStart(t *testing.T) {
	s, w := newPipeStream()
	r := newReadAhead(s, 16)
	defer r.Close()
	if !written(w, []byte("GET / HTTP/1.0\r\n"), 5*time.Second) {
		t.Fatal("a write to a stream not started yet blocked; want it read into the buffer")
	}
	r.start()
	b := make([]byte, 64)
	n, err := r.Read(b)
	if err != nil || string(b[:n]) != "GET / HTTP/1.0\r\n" {
		t.Errorf("Read = %q, %v; want what was sent before start", b[:n], err)
	}
	w.Close()
	if n, err := r.Read(b); n != 0 || err != io.EOF {
		t.Errorf("Read at the end = %d, %v; want 0, EOF", n, err)
	}
}

func TestReadAheadOverflowBeforeStart(t *testing.T) {
	s, w := newPipeStream()
	r := newReadAhead(s, 8)
	defer r.Close()
	if !written(w, []byte("0123456789"), 5*time.Second) {
		t.Fatal("the write blocked")
	}
	select {
	case <-r.overflow():
	case <-time.After(5 * time.Second):
		t.Fatal("10 bytes sent to an 8-byte read-ahead before start; want overflow")
	}
	// What comes next is read and dropped: the sender never stalls.
	if !written(w, []byte("more"), 5*time.Second) {
		t.Error("a write after the overflow blocked; want it dropped")
	}
	if _, err := r.Read(make([]byte, 4)); !errors.Is(err, errReadAheadFull) {
		t.Errorf("Read after overflow = %v; want errReadAheadFull", err)
	}
}

func TestReadAheadBackPressureAfterStart(t *testing.T) {
	s, w := newPipeStream()
	r := newReadAhead(s, 4)
	defer r.Close()
	r.start()
	if !written(w, []byte("abcd"), 5*time.Second) {
		t.Fatal("a write within the buffer blocked")
	}
	// The reading goroutine takes one more read, then waits for room.
	if !written(w, []byte("efgh"), 5*time.Second) {
		t.Fatal("the read the filler holds blocked")
	}
	if written(w, []byte("ijkl"), 200*time.Millisecond) {
		t.Fatal("a write past a full buffer after start returned; want it to wait for Read")
	}
	var got strings.Builder
	b := make([]byte, 3)
	for got.Len() < 12 {
		n, err := r.Read(b)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		got.Write(b[:n])
	}
	if got.String() != "abcdefghijkl" {
		t.Errorf("read %q; want abcdefghijkl in order", got.String())
	}
}

func TestReadAheadCloseEndsRead(t *testing.T) {
	s, _ := newPipeStream()
	r := newReadAhead(s, 16)
	r.start()
	done := make(chan error, 1)
	go func() { _, err := r.Read(make([]byte, 4)); done <- err }()
	time.Sleep(50 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read after Close = %v; want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Read waiting on the stream went on after Close")
	}
	select {
	case <-s.closed:
	default:
		t.Error("Close did not close the stream")
	}
}

// TestCarrierReadsWaitingStreams: a stream waiting for one of the srun
// carrier's slots is read all the same; before readAhead an unread stream
// stalled the SPDY connection's other streams, those holding the slots
// included, and 16 streams at once through srun hung.
func TestCarrierReadsWaitingStreams(t *testing.T) {
	s, _ := execServer(t)
	s.Srun = &SrunCarrier{Relay: func(context.Context) (string, error) { return "/bin/relay", nil }}
	var releases []func()
	for range maxCarried {
		r, err := s.Srun.acquire(context.Background(), "elsewhere", maxCarried, nil)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	stream, w := newPipeStream()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.PortForward(ctx, "ns", "pod", 8080, stream) }()
	if !written(w, []byte("GET / HTTP/1.0\r\n\r\n"), 5*time.Second) {
		t.Error("a stream waiting for a carrier slot was not read")
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "wait for a carried stream") {
			t.Errorf("port-forward ended with %v; want the wait's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("port-forward waiting for a slot went on after its context ended")
	}
}
