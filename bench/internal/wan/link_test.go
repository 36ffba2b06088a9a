package wan

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
)

// tcpPair returns the two ends of a TCP connection on loopback.
func tcpPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// piped starts link.Pipe between two TCP connections and returns their
// outer ends: what is written to near comes out of far, and back. The
// pipe's error is sent on the channel when it returns.
func piped(t testing.TB, ctx context.Context, link Link) (near, far *net.TCPConn, done <-chan error) {
	t.Helper()
	near, a := tcpPair(t)
	b, far := tcpPair(t)
	errc := make(chan error, 1)
	go func() { errc <- link.Pipe(ctx, a, b) }()
	return near, far, errc
}

func TestPipeCarriesBothWaysAndHalfCloses(t *testing.T) {
	for _, delay := range []time.Duration{0, 2 * time.Millisecond} {
		t.Run("delay="+delay.String(), func(t *testing.T) { testPipeBothWays(t, Link{Delay: delay}) })
	}
}

func testPipeBothWays(t *testing.T, link Link) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	near, far, done := piped(t, ctx, link)
	there, back := make([]byte, 3<<20+17), make([]byte, 1<<20+5)
	rand.Read(there)
	rand.Read(back)

	var gotBack []byte
	var errBack error
	var wg sync.WaitGroup
	wg.Go(func() { gotBack, errBack = io.ReadAll(near) })
	go func() {
		near.Write(there)
		near.CloseWrite()
	}()
	// The far end answers after it has seen the near end's EOF: the
	// half-close must come through, and leave the way back open.
	gotThere, err := io.ReadAll(far)
	if err != nil || !bytes.Equal(gotThere, there) {
		t.Fatalf("near → far: got %d bytes, %v; want the %d written, then EOF", len(gotThere), err, len(there))
	}
	if _, err := far.Write(back); err != nil {
		t.Fatalf("far → near after the half-close: %v", err)
	}
	far.CloseWrite()
	wg.Wait()
	if err := <-done; err != nil {
		t.Errorf("Pipe = %v; want nil once both directions ended", err)
	}
	if errBack != nil || !bytes.Equal(gotBack, back) {
		t.Errorf("far → near: got %d bytes, %v; want the %d written, then EOF", len(gotBack), errBack, len(back))
	}
}

// echoServer echoes every connection on loopback until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	return sshxtest.ServeLoopback(t, sshxtest.Echo)
}

// roundTrips sends one byte over c and waits for it back, n times, and
// returns each time taken.
func roundTrips(t *testing.T, c net.Conn, n int) []time.Duration {
	t.Helper()
	var rtts []time.Duration
	b := []byte{'x'}
	for range n {
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

// startRelay serves r on loopback until the test ends, and returns its
// address and a channel Serve's error is sent on.
func startRelay(t *testing.T, ctx context.Context, r *Relay) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln) }()
	return ln.Addr().String(), served
}

func TestRelayAddsTheRoundTrip(t *testing.T) {
	const delay = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, served := startRelay(t, ctx, &Relay{Link: Link{Delay: delay}, Target: echoServer(t)})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rtts := roundTrips(t, c, 11)
	// The first pays the handshake's round trip as well.
	if rtts[0] < 4*delay {
		t.Errorf("first round trip on a new connection %v; want at least %v (handshake and exchange)", rtts[0], 4*delay)
	}
	rtts = rtts[1:]
	for i, d := range rtts {
		if d < 2*delay {
			t.Errorf("round trip %d took %v: earlier than the %v the relay must add", i+1, d, 2*delay)
		}
	}
	// The best of ten is within a few milliseconds of the target even on a
	// busy machine; a loose bound that still catches a delay added twice.
	const tolerance = 15 * time.Millisecond
	if best := slices.Min(rtts); best > 2*delay+tolerance {
		t.Errorf("best round trip %v; want within %v of %v (all: %v)", best, tolerance, 2*delay, rtts)
	}

	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve after cancel = %v; want nil", err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read after Serve returned: %v; want the connection closed by the relay", err)
	}
}

func TestDelayIsPipelined(t *testing.T) {
	// Messages sent gap apart each arrive delay after they were sent: the
	// relay stamps each as it arrives and never waits for the one before
	// it to be released (stop-and-wait would take n × delay).
	const (
		delay = 100 * time.Millisecond
		gap   = 5 * time.Millisecond
		n     = 20
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	near, far, _ := piped(t, ctx, Link{Delay: delay})
	sent := make([]time.Time, n)
	go func() {
		for i := range n {
			sent[i] = time.Now()
			near.Write([]byte{byte(i)})
			time.Sleep(gap)
		}
	}()
	var last time.Time
	b := make([]byte, 1)
	for i := range n {
		if _, err := io.ReadFull(far, b); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		if int(b[0]) != i {
			t.Fatalf("message %d arrived as %d", i, b[0])
		}
		if early := sent[i].Add(delay).Sub(last); early > 0 {
			t.Errorf("message %d arrived %v before its delay had passed", i, early)
		}
	}
	if took := last.Sub(sent[0]); took > n*delay/2 {
		t.Errorf("%d messages %v apart took %v through a %v delay; want about %v (stop-and-wait: %v)",
			n, gap, took, delay, delay+n*gap, n*delay)
	}
}

func TestLineReadsAheadToItsLimitThenPushesBack(t *testing.T) {
	// A link of 10 s and 100 kB/s holds 1 MB in flight. Nothing is due
	// during the test: the relay must take that much from the sender
	// without waiting for the delay, and then stop reading.
	link := Link{Delay: 10 * time.Second, Rate: 100_000}
	limit := link.limit()
	if limit != 1_000_000 {
		t.Fatalf("limit = %d; want 1000000", limit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sender, a := tcpPair(t)
	b, receiver := tcpPair(t)
	// Small kernel buffers on the sender's way in, so that what it has
	// written is mostly what the relay holds.
	const sockBuf = 64 << 10
	sender.SetWriteBuffer(sockBuf)
	a.SetReadBuffer(sockBuf)
	done := make(chan error, 1)
	go func() { done <- link.Pipe(ctx, a, b) }()

	written := 0
	buf := make([]byte, 16<<10)
	// The sender is pushed back when several writes in a row make no
	// progress for a while (a generous while: the relay's reader may wait
	// for a busy core).
	for stalls := 0; stalls < 3; {
		sender.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := sender.Write(buf)
		written += n
		switch {
		case n > 0:
			stalls = 0
		case errors.Is(err, os.ErrDeadlineExceeded):
			stalls++
		case err != nil:
			t.Fatal(err)
		}
	}
	// The kernel doubles the buffer sizes it is given; allow both sockets'
	// buffers, one read and some slack besides the line.
	most := limit + readSize + 2*2*sockBuf + 64<<10
	if written < limit-readSize || written > most {
		t.Errorf("the sender wrote %d bytes before it was pushed back; want between %d (the line's limit, less one read) and %d", written, limit-readSize, most)
	}
	receiver.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := receiver.Read(buf); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the receiver read %d bytes, %v, within the 10 s delay; want nothing yet", n, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Pipe after cancel = %v; want nil", err)
	}
}

func TestThroughputKeepsWithDelay(t *testing.T) {
	// One stream with large socket buffers through a 50 ms round trip. A
	// sender limited to a window of 1 MiB per round trip would need 64
	// round trips (3.2 s) for 64 MiB; the relay reads ahead up to the
	// link's bandwidth-delay product (2 GB/s × 25 ms), so the stream takes
	// about one delay plus the copying, far less.
	const (
		delay  = 25 * time.Millisecond
		size   = 64 << 20
		window = 1 << 20
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	near, far, _ := piped(t, ctx, Link{Delay: delay})
	near.SetWriteBuffer(4 << 20)
	far.SetReadBuffer(4 << 20)
	start := time.Now()
	go func() {
		buf := make([]byte, 256<<10)
		for sent := 0; sent < size; sent += len(buf) {
			if _, err := near.Write(buf); err != nil {
				return
			}
		}
		near.CloseWrite()
	}()
	n, err := io.Copy(io.Discard, far)
	took := time.Since(start)
	if err != nil || n != size {
		t.Fatalf("received %d bytes, %v; want %d", n, err, size)
	}
	windowLimited := time.Duration(size/window) * 2 * delay
	if took < delay || took >= windowLimited {
		t.Errorf("%d MiB took %v through a %v round trip; want at least the delay and less than %v (one %d KiB window per round trip)",
			size>>20, took, 2*delay, windowLimited, window>>10)
	}
	t.Logf("%d MiB in %v: %.0f MB/s through a %v round trip", size>>20, took, float64(size)/took.Seconds()/1e6, 2*delay)
}

func TestRelayClosesTheClientWhenTheTargetIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, _ := startRelay(t, ctx, &Relay{Link: Link{Delay: time.Millisecond}, Target: target})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read: %v; want the connection closed when the target refuses it", err)
	}
}

func BenchmarkLinkThroughput(b *testing.B) {
	for _, delay := range []time.Duration{0, 5 * time.Millisecond, 25 * time.Millisecond} {
		b.Run("delay="+delay.String(), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			near, far, _ := piped(b, ctx, Link{Delay: delay})
			buf := make([]byte, 256<<10)
			const size = 64 << 20
			b.SetBytes(size)
			for b.Loop() {
				go func() {
					for sent := 0; sent < size; sent += len(buf) {
						near.Write(buf)
					}
				}()
				if _, err := io.CopyN(io.Discard, far, size); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
