package tunnel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
)

// startJob listens on 127.0.0.1, where the fake compute node's sshd dials
// the job's ports, and serves each connection with serve until the test
// ends. It returns the port.
func startJob(t testing.TB, serve func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sshxtest.Serve(t, ln, serve)
	return ln.Addr().(*net.TCPAddr).Port
}

// echoJob sends back what it reads, then half-closes.
func echoJob(c net.Conn) {
	io.Copy(c, c)
	c.(*net.TCPConn).CloseWrite()
}

// sourceJob sends bytes without end, as a job serving a large download does,
// whether or not its client reads them.
func sourceJob(c net.Conn) {
	go io.Copy(io.Discard, c)
	chunk := bytes.Repeat([]byte("sluice"), 32<<10/6)
	for {
		if _, err := c.Write(chunk); err != nil {
			return
		}
	}
}

// boundedForward runs a forward of port (and more) on site with the node
// known, set up by adjust, and returns it with the address the clients of
// port dial.
func boundedForward(t *testing.T, site *fakeSite, port int, adjust func(*Forward), more ...int) (*Forward, string, *loopbackListeners, *logRecorder) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "node")
	writeNode(t, file, site.nodeName)
	rec := newLogRecorder(t)
	f := &Forward{
		Hop: site.hop, Ports: append([]int{port}, more...), NodeFile: file, Log: slog.New(rec), Metrics: NewMetrics(nil, "forward"),
		Status: NewStatus("forward"), PollInterval: 20 * time.Millisecond, BackoffMin: 20 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
	}
	adjust(f)
	lns := &loopbackListeners{}
	startForward(t, f, lns)
	waitFor(t, 10*time.Second, "tunnel up", func() bool { return f.Status.Snapshot().State == StateUp })
	return f, lns.addr(port), lns, rec
}

// dialEcho dials addr and checks that msg comes back.
func dialEcho(t *testing.T, addr, msg string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	roundTrip(t, c, msg)
	c.SetDeadline(time.Time{})
	return c
}

// roundTrip writes msg on c and reads it back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
		t.Fatalf("read back %q, %v; want %q", buf, err, msg)
	}
}

// download reads n bytes from a new connection to addr within limit.
func download(t *testing.T, addr string, n int64, limit time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(limit))
	if got, err := io.CopyN(io.Discard, c, n); err != nil {
		t.Fatalf("a client that reads got %d bytes of %d: %v", got, n, err)
	}
}

// dialIdle dials addr and reads nothing.
func dialIdle(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expectEnded reads c to its end within limit: EOF or a reset, not a
// timeout.
func expectEnded(t *testing.T, c net.Conn, limit time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open after %v; want it closed by the tunnel", limit)
	}
}

func TestForwardConnLimit(t *testing.T) {
	site := startFakeSite(t)
	port, other := startJob(t, echoJob), startJob(t, echoJob)
	f, addr, lns, rec := boundedForward(t, site, port, func(f *Forward) { f.MaxConns = 2 }, other)

	// The limit is the forward's, all ports together.
	a := dialEcho(t, addr, "first")
	dialEcho(t, lns.addr(other), "second")
	for _, refused := range []string{addr, lns.addr(other), addr} {
		expectRefused(t, refused, 2*time.Second)
	}
	if got := testutil.ToFloat64(f.Metrics.refused.WithLabelValues(RefusedLimit)); got != 3 {
		t.Errorf("refused{reason=limit} = %v; want 3", got)
	}
	if n := rec.count("forward connection limit reached: connections refused", nil); n != 1 {
		t.Errorf("logged %d refusals over the limit; want 1 for the burst", n)
	}
	// The clients carried are not disturbed, and a slot that frees is
	// taken again.
	roundTrip(t, a, "still here")
	a.Close()
	waitFor(t, 5*time.Second, "closed connection released", func() bool { return testutil.ToFloat64(f.Metrics.active) == 1 })
	dialEcho(t, addr, "third")
}

func TestForwardStalledClientClosed(t *testing.T) {
	site := startFakeSite(t)
	port := startJob(t, sourceJob)
	f, addr, _, rec := boundedForward(t, site, port, func(f *Forward) { f.StallTimeout = 500 * time.Millisecond })

	stuck := dialIdle(t, addr)
	// Another client is served meanwhile.
	download(t, addr, 8<<20, 20*time.Second)
	waitFor(t, 10*time.Second, "a client not reading cut", func() bool {
		return testutil.ToFloat64(f.Metrics.cut.WithLabelValues(CutStalled)) == 1
	})
	expectEnded(t, stuck, 10*time.Second)
	waitFor(t, 5*time.Second, "no connection left", func() bool { return testutil.ToFloat64(f.Metrics.active) == 0 })
	if got := testutil.ToFloat64(f.Metrics.stalled); got != 0 {
		t.Errorf("stalled = %v after the stalled connection ended; want 0", got)
	}
	if n := rec.count("forward client not reading: connection closed", nil); n != 1 {
		t.Errorf("logged %d stalled clients; want 1", n)
	}
}

// Clients that stop reading hold at most MaxStalled SSH channel windows of
// the job's bytes in the tunnel's memory: beyond it they are closed at
// once, well before the stall timeout.
func TestForwardStallLimit(t *testing.T) {
	site := startFakeSite(t)
	port := startJob(t, sourceJob)
	f, addr, _, rec := boundedForward(t, site, port, func(f *Forward) {
		f.MaxStalled = 2
		f.StallTimeout = time.Hour
	})

	var stuck []net.Conn
	for range 6 {
		stuck = append(stuck, dialIdle(t, addr))
	}
	waitFor(t, 10*time.Second, "stalled connections beyond MaxStalled closed", func() bool {
		return testutil.ToFloat64(f.Metrics.cut.WithLabelValues(CutStallLimit)) == 4
	})
	if got := testutil.ToFloat64(f.Metrics.stalled); got != 2 {
		t.Errorf("stalled = %v; want MaxStalled, 2", got)
	}
	waitFor(t, 5*time.Second, "two connections left", func() bool { return testutil.ToFloat64(f.Metrics.active) == 2 })
	// A client that reads needs no slot.
	download(t, addr, 8<<20, 20*time.Second)
	if n := rec.count("too many forward clients not reading: connection closed", nil); n != 1 {
		t.Errorf("logged %d connections closed over MaxStalled; want 1 for the burst", n)
	}
	// A stalled client that reads again gives its slot back once it has
	// drained what waited.
	for _, c := range stuck {
		c.Close()
	}
	waitFor(t, 5*time.Second, "slots given back", func() bool { return testutil.ToFloat64(f.Metrics.stalled) == 0 })
}

func TestForwardIdleTimeout(t *testing.T) {
	site := startFakeSite(t)
	port := startJob(t, echoJob)
	f, addr, _, _ := boundedForward(t, site, port, func(f *Forward) { f.IdleTimeout = 400 * time.Millisecond })

	c := dialEcho(t, addr, "hello")
	// Talking more often than the idle timeout keeps the connection,
	// longer than the timeout in all.
	for i := range 6 {
		time.Sleep(150 * time.Millisecond)
		roundTrip(t, c, fmt.Sprint("ping ", i))
	}
	if got := testutil.ToFloat64(f.Metrics.cut.WithLabelValues(CutIdle)); got != 0 {
		t.Fatalf("cut{reason=idle} = %v while the client talked; want 0", got)
	}
	start := time.Now()
	expectEnded(t, c, 5*time.Second)
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("idle connection closed after %v; want the idle timeout, 400ms", took)
	}
	waitFor(t, 5*time.Second, "idle connection counted", func() bool {
		return testutil.ToFloat64(f.Metrics.cut.WithLabelValues(CutIdle)) == 1
	})
}

// The guard keeps half-closes: a client that ends its side still gets the
// job's answer.
func TestForwardHalfCloseBounded(t *testing.T) {
	site := startFakeSite(t)
	port := startJob(t, func(c net.Conn) {
		got, _ := io.ReadAll(c)
		fmt.Fprintf(c, "got %d bytes", len(got))
	})
	_, addr, _, _ := boundedForward(t, site, port, func(f *Forward) { f.IdleTimeout = 5 * time.Second })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "got 1048576 bytes" {
		t.Errorf("answer after a half-close = %q, %v; want %q", got, err, "got 1048576 bytes")
	}
}

func TestBurst(t *testing.T) {
	b := &burst{quiet: time.Second}
	t0 := time.Unix(1000, 0)
	var logged []string
	for _, at := range []time.Duration{0, 100 * time.Millisecond, 900 * time.Millisecond, 1800 * time.Millisecond, 3 * time.Second, 3100 * time.Millisecond} {
		if first, n := b.event(t0.Add(at)); first {
			logged = append(logged, fmt.Sprint(at, "+", n))
		}
	}
	// Each event within a second of the last continues the burst.
	if got, want := strings.Join(logged, " "), "0s+0 3s+3"; got != want {
		t.Errorf("logged %s; want %s", got, want)
	}
}

// TestBurstWithoutEndIsLoggedAgain: a client that keeps a burst going, an
// event every few seconds for ever, does not silence the log after its
// first line: the burst is logged again every burstRepeat, with the count
// of the events not logged since.
func TestBurstWithoutEndIsLoggedAgain(t *testing.T) {
	b := &burst{quiet: burstQuiet}
	t0 := time.Unix(1000, 0)
	var logged []string
	for at := time.Duration(0); at <= 3*time.Minute; at += 5 * time.Second {
		if first, n := b.event(t0.Add(at)); first {
			logged = append(logged, fmt.Sprint(at, "+", n))
		}
	}
	if got, want := strings.Join(logged, " "), "0s+0 1m0s+11 2m0s+11 3m0s+11"; got != want {
		t.Errorf("logged %s; want %s", got, want)
	}
}

func TestSlots(t *testing.T) {
	s := newSlots(2)
	if !s.take() || !s.take() || s.take() {
		t.Fatal("want two slots, then none")
	}
	s.release()
	if !s.take() {
		t.Error("a released slot is not taken again")
	}
	unbounded := newSlots(-1)
	for range 1000 {
		if !unbounded.take() {
			t.Fatal("a negative bound refused a slot")
		}
	}
}

// A stalled connection whose job stops sending holds nothing of the job's
// once its read waits, even if its last read was full (the job's last
// packet filled it): it gives its slot back instead of keeping it until the
// connection ends.
func TestGuardReadThatWaitsUnstalls(t *testing.T) {
	client, clientPeer := net.Pipe()
	remote, remotePeer := net.Pipe()
	defer clientPeer.Close()
	defer remotePeer.Close()
	stalled := newSlots(1)
	m := NewMetrics(nil, "forward")
	g := newGuard(client, remote, limits{maxConns: -1, maxStalled: 1, idleTimeout: -1, stallTimeout: time.Hour}, stalled, m)
	defer g.stop()

	// The client takes nothing: the write stalls and takes the slot.
	wrote := make(chan error, 1)
	go func() {
		_, err := g.clientSide().Write([]byte("job's bytes"))
		wrote <- err
	}()
	waitFor(t, 5*time.Second, "write stalled", func() bool { return testutil.ToFloat64(m.stalled) == 1 })
	io.ReadFull(clientPeer, make([]byte, len("job's bytes")))
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	// The job sends one full read, then nothing.
	read := make(chan error, 1)
	buf := make([]byte, 4)
	go func() {
		for {
			if _, err := g.remoteSide().Read(buf); err != nil {
				read <- err
				return
			}
		}
	}()
	remotePeer.Write([]byte("full"))
	waitFor(t, 5*time.Second, "slot given back while the read waits", func() bool { return testutil.ToFloat64(m.stalled) == 0 })
	if !stalled.take() {
		t.Error("the slot given back cannot be taken")
	}
	remotePeer.Close()
	if err := <-read; !errors.Is(err, io.EOF) {
		t.Errorf("read after the job closed = %v; want EOF", err)
	}
}
