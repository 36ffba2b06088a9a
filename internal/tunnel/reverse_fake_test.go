package tunnel

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
)

// closedPort returns a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// fakeReverse is a Reverse on a fakeSite with an echo endpoint (6379) and
// one whose destination refuses (9000).
func fakeReverse(t *testing.T, site *fakeSite, node string) (*Reverse, *stateRecorder, *logRecorder) {
	t.Helper()
	states := &stateRecorder{}
	rec := newLogRecorder(t)
	file := filepath.Join(t.TempDir(), "node")
	writeNode(t, file, node)
	return &Reverse{
		Hop:       site.hop,
		NodeFile:  file,
		SocketDir: filepath.Join(t.TempDir(), "sock", "3f1c-pod-uid"),
		Endpoints: []Endpoint{
			{ListenPort: 6379, Host: "127.0.0.1", Port: startTCPEcho(t)},
			{ListenPort: 9000, Host: "127.0.0.1", Port: closedPort(t)},
		},
		Log:               slog.New(rec),
		Metrics:           NewMetrics(nil, "reverse"),
		BackoffMin:        20 * time.Millisecond,
		BackoffMax:        500 * time.Millisecond,
		PollInterval:      20 * time.Millisecond,
		KeepAliveInterval: time.Second,
		KeepAliveTimeout:  time.Second,
		OnState:           states.record,
	}, states, rec
}

func TestReverseFakeSite(t *testing.T) {
	site := startFakeSite(t)
	r, states, rec := fakeReverse(t, site, "")
	startReverse(t, r)
	sock := filepath.Join(r.SocketDir, "rev-6379.sock")
	refusing := filepath.Join(r.SocketDir, "rev-9000.sock")

	// No node yet: no session.
	time.Sleep(100 * time.Millisecond)
	if n := site.login.connections(); n != 0 || len(states.get()) != 0 {
		t.Fatalf("with no node: %d login connections, states %v; want none", n, states.get())
	}
	writeNode(t, r.NodeFile, site.nodeName)
	waitFor(t, 10*time.Second, "tunnel up", func() bool { return states.ups() == 1 })
	if got := testutil.ToFloat64(r.Metrics.up); got != 1 {
		t.Errorf("up = %v; want 1", got)
	}

	t.Run("echo", func(t *testing.T) {
		echoUnix(t, sock, []byte("PING\r\n"))
		payload := make([]byte, 1<<20)
		rand.Read(payload)
		echoUnix(t, sock, payload)
		// A write is counted once done, which the echo may beat.
		waitFor(t, 5*time.Second, "bytes counted", func() bool {
			return testutil.ToFloat64(r.Metrics.bytesIn) == float64(len(payload)+6) &&
				testutil.ToFloat64(r.Metrics.bytesOut) == float64(len(payload)+6)
		})
		if got := testutil.ToFloat64(r.Metrics.conns.WithLabelValues("6379")); got != 2 {
			t.Errorf("connections{port=6379} = %v; want 2", got)
		}
	})

	t.Run("socket directory", func(t *testing.T) {
		fi, err := os.Lstat(r.SocketDir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("socket directory = %v, %v; want a directory 0700", fi, err)
		}
	})

	t.Run("dial failure closes one channel", func(t *testing.T) {
		for range 2 {
			c, err := net.Dial("unix", refusing)
			if err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				t.Errorf("read from a channel whose dial failed = %d, %v; want EOF", n, err)
			}
			c.Close()
		}
		echoUnix(t, sock, []byte("still fine"))
		if got := testutil.ToFloat64(r.Metrics.refused.WithLabelValues(RefusedDial)); got != 2 {
			t.Errorf("refused{dial} = %v; want 2", got)
		}
		// Warned once, then at debug.
		if n := countLevel(rec, slog.LevelWarn, "reverse dial failed: connection closed"); n != 1 {
			t.Errorf("warned %d times of the failed dials; want 1", n)
		}
		if states.ups() != 1 {
			t.Errorf("states = %v; want the tunnel still up", states.get())
		}
	})

	// Each way the session can end, and the tunnel coming back.
	ends := []struct {
		name  string
		end   func(t *testing.T)
		cause string
	}{
		{"socket removed", func(t *testing.T) { os.Remove(refusing) }, "socket rev-9000.sock removed"},
		{"directory removed", func(t *testing.T) { os.RemoveAll(r.SocketDir) }, "socket directory removed"},
		{"directory replaced", func(t *testing.T) {
			old := r.SocketDir + ".old"
			if err := os.Rename(r.SocketDir, old); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(r.SocketDir, 0o700); err != nil {
				t.Fatal(err)
			}
			// Sockets of the same names, as another session would make:
			// only the inode tells the directory changed.
			for _, e := range r.Endpoints {
				listenStale(t, filepath.Join(r.SocketDir, e.socket()))
			}
			os.RemoveAll(old)
		}, "socket directory replaced"},
		{"node connection dropped", func(t *testing.T) { site.node.drop() }, "ssh connection to the node lost"},
		{"login connection dropped", func(t *testing.T) { site.login.drop() }, "ssh connection to the node lost"},
	}
	for i, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			end.end(t)
			waitFor(t, 10*time.Second, "tunnel back", func() bool { return states.ups() == i+2 })
			if got, want := states.get(), len(states.get()); got[want-2] {
				t.Errorf("states = %v; want down before up", got)
			}
			if got := lastAttr(rec, "reverse tunnel down", "error"); !strings.Contains(got, end.cause) {
				t.Errorf("tunnel down because %q; want %q", got, end.cause)
			}
			echoUnix(t, sock, []byte("back"))
			// The old holder ends on the node: only the new one runs.
			waitFor(t, 5*time.Second, "old holder gone", func() bool { return site.node.running() == 1 })
			if got := testutil.ToFloat64(r.Metrics.reconnects); got != float64(i+1) {
				t.Errorf("reconnects = %v; want %d", got, i+1)
			}
		})
	}

	t.Run("node gone", func(t *testing.T) {
		ups := states.ups()
		writeNode(t, r.NodeFile, "")
		waitFor(t, 5*time.Second, "tunnel down", func() bool { s := states.get(); return !s[len(s)-1] })
		waitFor(t, 5*time.Second, "connections closed", func() bool {
			return site.login.connections() == 0 && site.node.connections() == 0
		})
		writeNode(t, r.NodeFile, site.nodeName)
		waitFor(t, 10*time.Second, "tunnel back", func() bool { return states.ups() == ups+1 })
		echoUnix(t, sock, []byte("back on the node"))
	})
}

func TestReverseFakeStops(t *testing.T) {
	site := startFakeSite(t)
	r, states, _ := fakeReverse(t, site, site.nodeName)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	waitFor(t, 10*time.Second, "tunnel up", func() bool { return states.ups() == 1 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}
	if got := states.get(); len(got) != 2 || got[1] {
		t.Errorf("states = %v; want [true false]", got)
	}
	if got := testutil.ToFloat64(r.Metrics.up); got != 0 {
		t.Errorf("up = %v; want 0", got)
	}
	waitFor(t, 5*time.Second, "connections closed and holder gone", func() bool {
		return site.login.connections() == 0 && site.node.connections() == 0 && site.node.running() == 0
	})
}

func TestReverseFakeHostKeyMismatch(t *testing.T) {
	site := startFakeSite(t)
	// The node offers a key other than the one pinned.
	other := sshxtest.NewSigner(t)
	keys, err := sshx.HostKeys(sshxtest.KnownHosts(t, site.node.addr, other.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	site.hop.NodeHostKeys = keys
	r, states, rec := fakeReverse(t, site, site.nodeName)
	r.BackoffMax = 100 * time.Millisecond
	var calls atomic.Int32
	var last atomic.Value
	r.OnHostKeyError = func(err error) {
		calls.Add(1)
		last.Store(err)
	}
	startReverse(t, r)
	waitFor(t, 5*time.Second, "three attempts", func() bool { return calls.Load() >= 3 })
	var keyErr *sshx.HostKeyError
	if err, _ := last.Load().(error); !errors.As(err, &keyErr) {
		t.Errorf("OnHostKeyError got %v; want a *sshx.HostKeyError", err)
	}
	msg := "host key rejected: not connecting (a man-in-the-middle, or wrong pinned host keys)"
	if n := rec.count(msg, nil); n != 1 {
		t.Errorf("logged the mismatch %d times at error level; want once per series", n)
	}
	if len(states.get()) != 0 {
		t.Errorf("states = %v; want never up", states.get())
	}
	if _, err := os.Lstat(r.SocketDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory made on a host with a wrong key: %v", err)
	}
	if site.node.running() != 0 {
		t.Error("a command ran on a host with a wrong key")
	}
}

func TestReverseFakeUnsafeDirectory(t *testing.T) {
	site := startFakeSite(t)
	r, states, rec := fakeReverse(t, site, site.nodeName)
	if err := os.MkdirAll(r.SocketDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(r.SocketDir, 0o777); err != nil {
		t.Fatal(err)
	}
	startReverse(t, r)
	waitFor(t, 5*time.Second, "refused", func() bool {
		return countWith(rec, "reverse tunnel connect failed", "error", "writable by group or others") >= 2
	})
	if len(states.get()) != 0 {
		t.Errorf("states = %v; want never up", states.get())
	}
	if exists(filepath.Join(r.SocketDir, "rev-6379.sock")) {
		t.Error("a socket was made in a directory others may write to")
	}
}

func TestReverseFakeStaleSocket(t *testing.T) {
	site := startFakeSite(t)
	r, states, _ := fakeReverse(t, site, site.nodeName)
	if err := os.MkdirAll(r.SocketDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Left by a session that died; the sshd will not bind over it.
	listenStale(t, filepath.Join(r.SocketDir, "rev-6379.sock"))
	startReverse(t, r)
	waitFor(t, 10*time.Second, "tunnel up", func() bool { return states.ups() == 1 })
	echoUnix(t, filepath.Join(r.SocketDir, "rev-6379.sock"), []byte("over the stale socket"))
}

// countLevel counts the records of msg at level.
func countLevel(h *logRecorder, level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range *h.recs {
		if l.msg == msg && l.level == level {
			n++
		}
	}
	return n
}

// countWith counts the records of msg whose attribute key contains part.
func countWith(h *logRecorder, msg, key, part string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range *h.recs {
		if l.msg == msg && strings.Contains(l.attrs[key], part) {
			n++
		}
	}
	return n
}

// lastAttr is the attribute key of the last record of msg.
func lastAttr(h *logRecorder, msg, key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := ""
	for _, l := range *h.recs {
		if l.msg == msg {
			v = l.attrs[key]
		}
	}
	return v
}
