package kubeletstream

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildRelay builds cmd/sluice-relay for the fake srun to run.
func buildRelay(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	out := filepath.Join(t.TempDir(), "sluice-relay")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/sluice-relay")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sluice-relay: %v\n%s", err, b)
	}
	return out
}

// halfStream is one end of a loopback TCP connection as a port-forward
// stream: its Close ends its write side.
type halfStream struct{ *net.TCPConn }

func (h halfStream) Close() error { return h.CloseWrite() }

// streamPair is a stream for PortForward and kubectl's end of it.
func streamPair(t *testing.T) (halfStream, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return halfStream{server.(*net.TCPConn)}, client.(*net.TCPConn)
}

func TestPortForwardBySrun(t *testing.T) {
	s, srunLog := execServer(t)
	relay := buildRelay(t)
	s.Srun = &SrunCarrier{Relay: func(context.Context) (string, error) { return relay, nil }}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		c.Write([]byte("got " + string(b)))
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	stream, kubectl := streamPair(t)
	done := make(chan error, 1)
	go func() { done <- s.PortForward(context.Background(), "ns", "pod", int32(port), stream) }()
	kubectl.Write([]byte("hello"))
	kubectl.CloseWrite()
	_ = kubectl.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(kubectl)
	if err != nil || string(got) != "got hello" {
		t.Errorf("got %q, %v through srun; want %q", got, err, "got hello")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("port-forward ended with %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("port-forward went on 10s after both sides ended")
	}
	args, _ := exec.Command("cat", srunLog).Output()
	if want := relay + "\n--connect\n127.0.0.1:" + strconv.Itoa(port) + "\n"; !strings.HasSuffix(string(args), want) {
		t.Errorf("srun got %q; want it to run the relay with --connect", args)
	}

	// Nothing listens: an error at once, saying so. (kubectl's end
	// half-closes: the test's sshd, unlike OpenSSH's, reports the exit only
	// once the command's stdin ended.)
	ln.Close()
	stream, kubectl = streamPair(t)
	kubectl.CloseWrite()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = s.PortForward(ctx, "ns", "pod", int32(port), stream)
	if err == nil || !strings.Contains(err.Error(), "nothing listens") {
		t.Errorf("got %v for a closed port; want an error saying nothing listens", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a closed port took %v to fail", took)
	}
}

func TestCarrierSlots(t *testing.T) {
	var c SrunCarrier
	ctx := context.Background()
	var releases []func()
	for i := range maxCarried {
		r, err := c.acquire(ctx, fmt.Sprint("ns", i), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.acquire(short, "other", 1, nil); err == nil {
		t.Fatalf("got a slot beyond %d; want to wait", maxCarried)
	}
	releases[0]()
	releases[0]() // a second release does nothing
	if r, err := c.acquire(ctx, "other", 1, nil); err != nil {
		t.Errorf("got %v after a slot was given back", err)
	} else {
		r()
	}
}

// TestCarrierNamespaceShare: a namespace holding its share of the slots
// waits for one of its own to end, while another namespace is served.
func TestCarrierNamespaceShare(t *testing.T) {
	var c SrunCarrier
	ctx := context.Background()
	share := (Limits{}).share(maxCarried)
	var mine []func()
	for range share {
		r, err := c.acquire(ctx, "greedy", share, nil)
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, r)
	}
	got := make(chan func(), 1)
	go func() {
		r, err := c.acquire(ctx, "greedy", share, nil)
		if err == nil {
			got <- r
		}
	}()
	r, err := c.acquire(ctx, "other", share, nil)
	if err != nil {
		t.Fatalf("another namespace: %v; want a slot", err)
	}
	r()
	select {
	case <-got:
		t.Fatalf("namespace greedy got a slot beyond its share of %d", share)
	case <-time.After(200 * time.Millisecond):
	}
	mine[0]()
	select {
	case r := <-got:
		r()
	case <-time.After(5 * time.Second):
		t.Fatal("namespace greedy got no slot after one of its own ended")
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 4}
	b.Write([]byte("abc"))
	b.Write([]byte("defg"))
	if got := b.String(); got != "defg" {
		t.Errorf("got %q; want the last 4 bytes", got)
	}
}
