package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/ssh"
)

// logRecorder is a slog handler that keeps every record and writes it to
// the test log.
type logRecorder struct {
	t     testing.TB
	attrs []slog.Attr
	mu    *sync.Mutex
	recs  *[]loggedLine
}

type loggedLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func newLogRecorder(t testing.TB) *logRecorder {
	return &logRecorder{t: t, mu: &sync.Mutex{}, recs: &[]loggedLine{}}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	line := loggedLine{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	var b strings.Builder
	add := func(a slog.Attr) bool {
		line.attrs[a.Key] = a.Value.String()
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.mu.Lock()
	*h.recs = append(*h.recs, line)
	h.mu.Unlock()
	h.t.Logf("%s %s%s", r.Level, r.Message, b.String())
	return nil
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// count returns how many records have msg and, for each key of attrs, that
// value.
func (h *logRecorder) count(msg string, attrs map[string]string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
next:
	for _, l := range *h.recs {
		if l.msg != msg {
			continue
		}
		for k, v := range attrs {
			if l.attrs[k] != v {
				continue next
			}
		}
		n++
	}
	return n
}

// waitFor polls cond every 10ms until it holds, failing the test after
// timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loopbackListeners is a Forward.Listener that listens on 127.0.0.1:0 and
// records the address of each port's listener.
type loopbackListeners struct {
	mu    sync.Mutex
	addrs map[int]string
}

func (l *loopbackListeners) listen(port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs == nil {
		l.addrs = map[int]string{}
	}
	l.addrs[port] = ln.Addr().String()
	return ln, nil
}

func (l *loopbackListeners) addr(port int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addrs[port]
}

// startForward runs f until the test ends and waits until every port
// listens.
func startForward(t *testing.T, f *Forward, lns *loopbackListeners) {
	t.Helper()
	f.Listener = lns.listen
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v; want nil after cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of cancel")
		}
	})
	waitFor(t, 5*time.Second, "forward listening", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run = %v before serving", err)
		default:
		}
		for _, p := range f.Ports {
			if lns.addr(p) == "" {
				return false
			}
		}
		return true
	})
}

// expectRefused connects to addr and checks the connection is closed
// within limit without a byte.
func expectRefused(t *testing.T, addr string, limit time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return // refused outright is fine too
	}
	defer c.Close()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit + 5*time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read from a refused connection = %d, %v; want EOF or a reset", n, err)
	}
	if took := time.Since(start); took > limit {
		t.Errorf("refused connection closed after %v; want within %v", took, limit)
	}
}

func writeNode(t testing.TB, file, node string) {
	t.Helper()
	// Swap the file in like the kubelet does, so that readers never see
	// half of it.
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(node+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// refusingHop is a Hop whose login node cannot be reached; it counts the
// attempts.
func refusingHop(dials *atomic.Int32) *Hop {
	accept := func(string, net.Addr, ssh.PublicKey) error { return nil }
	return &Hop{
		LoginAddr:     "127.0.0.1:1",
		User:          "alice",
		LoginHostKeys: accept,
		NodeHostKeys:  accept,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("no login node here")
		},
	}
}

func TestForwardCheck(t *testing.T) {
	hop := &Hop{}
	tests := []struct {
		name string
		f    Forward
		want string
	}{
		{"no hop", Forward{Ports: []int{80}, NodeFile: "n"}, "no hop"},
		{"bad target", Forward{Hop: hop, Target: "compute", Ports: []int{80}, NodeFile: "n"}, `target "compute"`},
		{"no port", Forward{Hop: hop, NodeFile: "n"}, "no port"},
		{"port zero", Forward{Hop: hop, Ports: []int{0}, NodeFile: "n"}, "port 0: out of range"},
		{"port too high", Forward{Hop: hop, Ports: []int{65536}, NodeFile: "n"}, "port 65536: out of range"},
		{"port twice", Forward{Hop: hop, Ports: []int{80, 80}, NodeFile: "n"}, "port 80: listed twice"},
		{"no node file", Forward{Hop: hop, Ports: []int{80}}, "no node file"},
		{"negative", Forward{Hop: hop, Ports: []int{80}, NodeFile: "n", PollInterval: -1}, "negative"},
		{"backoff", Forward{Hop: hop, Ports: []int{80}, NodeFile: "n", BackoffMin: time.Second, BackoffMax: time.Millisecond}, "backoff max"},
		{"ok", Forward{Hop: hop, Target: TargetLogin, Ports: []int{80, 443}, NodeFile: "n"}, ""},
		{"entry", Forward{Hop: hop, Ports: []int{80}, NodeFile: "n", EntryDirFile: "d"}, ""},
		{"entry from the login node", Forward{Hop: hop, Target: TargetLogin, Ports: []int{80}, NodeFile: "n", EntryDirFile: "d"}, "entry directory file needs target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("check = %v; want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("check = %v; want an error with %q", err, tt.want)
			}
		})
	}
}

func TestForwardListenError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	var dials atomic.Int32
	f := &Forward{Hop: refusingHop(&dials), Ports: []int{port}, NodeFile: "/nonexistent", Listen: "127.0.0.1"}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err = f.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("listen on port %d", port)) {
		t.Errorf("Run = %v; want a listen error naming port %d", err, port)
	}
}

func TestForwardNoNodeRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node")
	writeNode(t, file, "")
	var dials atomic.Int32
	rec := newLogRecorder(t)
	lns := &loopbackListeners{}
	m := NewMetrics(nil, "forward")
	f := &Forward{
		Hop: refusingHop(&dials), Ports: []int{8080}, NodeFile: file, Log: slog.New(rec), PollInterval: 10 * time.Millisecond,
		BackoffMin: 10 * time.Second, BackoffMax: 20 * time.Second, Metrics: m, Status: NewStatus("forward"),
	}
	startForward(t, f, lns)
	expectRefused(t, lns.addr(8080), 2*time.Second)
	if n := rec.count("no node known: connection refused", nil); n != 1 {
		t.Errorf("logged %d refusals; want 1", n)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("dialed the login node %d times with no node; want 0", n)
	}

	if st := f.Status.Snapshot().State; st != StateWaiting {
		t.Errorf("state with no node = %s; want %s", st, StateWaiting)
	}

	// Once a node is named, the tunnel connects without waiting for a
	// client: here the login node is unreachable, so the attempt fails, and
	// clients during the backoff are refused at once.
	writeNode(t, file, "node1")
	waitFor(t, 5*time.Second, "attempt made and failed", func() bool {
		return f.Status.Snapshot().State == StateDown
	})
	expectRefused(t, lns.addr(8080), 2*time.Second)
	expectRefused(t, lns.addr(8080), 2*time.Second)
	if n := dials.Load(); n != 1 {
		t.Errorf("dialed the login node %d times; want 1 (the clients fall in the backoff)", n)
	}
	if n := rec.count("ssh connect failed", map[string]string{"node": "node1"}); n != 1 {
		t.Errorf("logged %d failed attempts; want 1", n)
	}
	for reason, want := range map[string]float64{RefusedNoNode: 1, RefusedConnect: 0, RefusedBackoff: 2, RefusedHostKey: 0} {
		if got := testutil.ToFloat64(m.refused.WithLabelValues(reason)); got != want {
			t.Errorf("refused{reason=%q} = %v; want %v", reason, got, want)
		}
	}
	if got := testutil.ToFloat64(m.up); got != 0 {
		t.Errorf("up = %v; want 0", got)
	}

	// A file naming no valid node keeps the last node.
	writeNode(t, file, "node1;reboot")
	waitFor(t, 5*time.Second, "bad node file reported", func() bool {
		return rec.count("node file unusable: keeping the last node", nil) == 1
	})
}

func TestLinkBackoff(t *testing.T) {
	l := &link{backMin: 100 * time.Millisecond, backMax: time.Second}
	tests := []struct {
		failures int
		base     time.Duration
	}{
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{5, time.Second},
		{50, time.Second},
	}
	for _, tt := range tests {
		for range 100 {
			if got := l.backoff(tt.failures); got < tt.base/2 || got > tt.base {
				t.Fatalf("backoff(%d) = %v; want between %v and %v", tt.failures, got, tt.base/2, tt.base)
			}
		}
	}
}
