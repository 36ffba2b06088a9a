//go:build rig

package tunnel

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func TestForwardNodeRig(t *testing.T) {
	r := testrig.Load(t)
	port := startEcho(t, r, "127.0.0.1")
	closed := freeNodePort(t)
	file := nodeFile(t, r.Get(t, "RIG_NODE_NAME"))
	d := &loginDialer{}
	rec := newLogRecorder(t)
	lns := &loopbackListeners{}
	f := &Forward{
		Hop:          rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), d),
		Ports:        []int{port, closed},
		NodeFile:     file,
		Log:          slog.New(rec),
		PollInterval: 20 * time.Millisecond,
		BackoffMin:   50 * time.Millisecond,
		BackoffMax:   time.Second,
		Metrics:      NewMetrics(nil, "forward"),
		Status:       NewStatus("forward"),
	}
	startForward(t, f, lns)
	addr := lns.addr(port)
	node := r.Get(t, "RIG_NODE_NAME")
	waitFor(t, 5*time.Second, "tunnel up", func() bool {
		st := f.Status.Snapshot()
		return st.State == StateUp && st.Node == node && st.Ups == 1
	})

	t.Run("round trip", func(t *testing.T) {
		msg := []byte("hello through the node\n")
		echo(t, addr, msg)
		m := f.Metrics
		// The client may see the end before the forward has counted it.
		waitFor(t, 5*time.Second, "connection counted closed", func() bool { return testutil.ToFloat64(m.active) == 0 })
		for name, c := range map[string]struct{ got, want float64 }{
			"up":                      {testutil.ToFloat64(m.up), 1},
			"connections{port}":       {testutil.ToFloat64(m.conns.WithLabelValues(strconv.Itoa(port))), 1},
			"bytes{direction=out}":    {testutil.ToFloat64(m.bytesOut), float64(len(msg))},
			"bytes{direction=in}":     {testutil.ToFloat64(m.bytesIn), float64(len(msg))},
			"reconnects before a cut": {testutil.ToFloat64(m.reconnects), 0},
		} {
			if c.got != c.want {
				t.Errorf("%s = %v; want %v", name, c.got, c.want)
			}
		}
	})

	t.Run("1 MiB both ways", func(t *testing.T) {
		payload := make([]byte, 1<<20)
		rand.Read(payload)
		echo(t, addr, payload)
	})

	t.Run("16 clients over one login", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() { echo(t, addr, []byte(strings.Repeat(strconv.Itoa(i), 1000))) })
		}
		wg.Wait()
		if n := d.n.Load(); n != 1 {
			t.Errorf("login dials = %d; want 1", n)
		}
		if n := rec.count("ssh connected", map[string]string{"hop": "node"}); n != 1 {
			t.Errorf("node connections = %d; want 1", n)
		}
	})

	t.Run("no server on the port", func(t *testing.T) {
		expectRefused(t, lns.addr(closed), 2*time.Second)
		echo(t, addr, []byte("still fine"))
	})

	t.Run("node change", func(t *testing.T) {
		// A connection open across the change keeps working; the old
		// node's connection is closed once it ends.
		held, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		held.SetDeadline(time.Now().Add(30 * time.Second))
		roundTrip(t, held, "before")

		newNode := r.Get(t, "RIG_NODE_ADDR")
		writeNode(t, file, newNode)
		waitFor(t, 5*time.Second, "node change seen", func() bool {
			return rec.count("node changed", map[string]string{"to": newNode}) == 1
		})
		echo(t, addr, []byte("after the change"))
		if n := rec.count("ssh connected", map[string]string{"hop": "node", "node": newNode}); n != 1 {
			t.Errorf("connections to %s's sshd = %d; want 1", newNode, n)
		}
		roundTrip(t, held, "during")
		if n := rec.count("ssh connection to old node closed", nil); n != 0 {
			t.Errorf("old node connection closed while a client used it")
		}
		held.Close()
		waitFor(t, 5*time.Second, "old node connection closed", func() bool {
			return rec.count("ssh connection to old node closed", map[string]string{"node": r.Get(t, "RIG_NODE_NAME")}) == 1
		})
		if n := d.n.Load(); n != 1 {
			t.Errorf("login dials = %d; want 1 (the login connection outlives a node change)", n)
		}
	})

	t.Run("login connection cut", func(t *testing.T) {
		d.cut()
		waitFor(t, 5*time.Second, "tunnel back up by itself", func() bool {
			return f.Status.Snapshot().Ups == 3 // up, node change, back after the cut
		})
		echo(t, addr, []byte("after the cut"))
		if n := d.n.Load(); n != 2 {
			t.Errorf("login dials = %d; want 2", n)
		}
		if got := testutil.ToFloat64(f.Metrics.reconnects); got != 1 {
			t.Errorf("reconnects = %v; want 1", got)
		}
		if got := testutil.ToFloat64(f.Metrics.refused.WithLabelValues(RefusedDial)); got != 1 {
			t.Errorf("refused{dial} = %v; want 1 (the port with no server)", got)
		}
	})
}

func TestForwardLoginRig(t *testing.T) {
	r := testrig.Load(t)
	nodeAddr := r.Get(t, "RIG_NODE_ADDR")
	port := startEcho(t, r, nodeAddr)
	loopbackOnly := startEcho(t, r, "127.0.0.1")
	d := &loginDialer{}
	lns := &loopbackListeners{}
	f := &Forward{
		Hop:          rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), d),
		Target:       TargetLogin,
		Ports:        []int{port, loopbackOnly},
		NodeFile:     nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
		Log:          slog.New(newLogRecorder(t)),
		PollInterval: 20 * time.Millisecond,
	}
	startForward(t, f, lns)
	echo(t, lns.addr(port), []byte("hello through the login node\n"))
	// The login node cannot reach the node's loopback.
	expectRefused(t, lns.addr(loopbackOnly), 2*time.Second)
	echo(t, lns.addr(port), []byte("again"))
	if n := d.n.Load(); n != 1 {
		t.Errorf("login dials = %d; want 1", n)
	}
}

func TestForwardNodeHostKeyMismatchRig(t *testing.T) {
	r := testrig.Load(t)
	port := startEcho(t, r, "127.0.0.1")
	node := r.Get(t, "RIG_NODE_NAME")

	// known_hosts pinning another key for the node.
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{node, r.Get(t, "RIG_NODE_ADDR")}, key) + "\n"
	if err := os.WriteFile(wrong, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var hooked []error
	rec := newLogRecorder(t)
	lns := &loopbackListeners{}
	f := &Forward{
		Hop:          rigHop(t, r, wrong, &loginDialer{}),
		Ports:        []int{port},
		NodeFile:     nodeFile(t, node),
		Log:          slog.New(rec),
		PollInterval: 20 * time.Millisecond,
		BackoffMin:   50 * time.Millisecond,
		BackoffMax:   time.Minute,
		OnHostKeyError: func(err error) {
			mu.Lock()
			hooked = append(hooked, err)
			mu.Unlock()
		},
		Status: NewStatus("forward"),
	}
	startForward(t, f, lns)
	waitFor(t, 5*time.Second, "host key rejected before any client", func() bool {
		return f.Status.Snapshot().State == StateHostKeyRejected
	})
	if st := f.Status.Snapshot(); st.Node != node || !strings.Contains(st.Error, "host key") || st.Ups != 0 {
		t.Errorf("status = %+v; want node %s, a host key error, never up", st, node)
	}
	expectRefused(t, lns.addr(port), 5*time.Second)
	// During the backoff a client is refused at once, with no new attempt.
	expectRefused(t, lns.addr(port), 500*time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	if len(hooked) != 1 {
		t.Fatalf("OnHostKeyError called %d times; want 1", len(hooked))
	}
	var keyErr *sshx.HostKeyError
	if !errors.As(hooked[0], &keyErr) {
		t.Errorf("OnHostKeyError got %v; want an *sshx.HostKeyError", hooked[0])
	}
	if n := rec.count("host key rejected: not connecting (a man-in-the-middle, or wrong pinned host keys)", map[string]string{"node": node}); n != 1 {
		t.Errorf("host key errors logged = %d; want 1", n)
	}
	if n := rec.count("ssh connected", map[string]string{"hop": "node"}); n != 0 {
		t.Errorf("connected to the node %d times with a wrong host key; want 0", n)
	}
}

func TestForwardReconnectBackoffRig(t *testing.T) {
	r := testrig.Load(t)
	port := startEcho(t, r, "127.0.0.1")
	d := &loginDialer{}
	d.fail.Store(2)
	rec := newLogRecorder(t)
	lns := &loopbackListeners{}
	f := &Forward{
		Hop:          rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), d),
		Ports:        []int{port},
		NodeFile:     nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
		Log:          slog.New(rec),
		PollInterval: 20 * time.Millisecond,
		BackoffMin:   200 * time.Millisecond,
		BackoffMax:   400 * time.Millisecond,
		Status:       NewStatus("forward"),
	}
	startForward(t, f, lns)

	// The connection is made before any client comes: two attempts fail,
	// each followed by a backoff, then one succeeds.
	waitFor(t, 5*time.Second, "tunnel up without a client", func() bool { return f.Status.Snapshot().State == StateUp })
	if n := d.n.Load(); n != 3 {
		t.Errorf("login dials = %d; want 3 (two failures, then the connection)", n)
	}
	for i, gap := range d.gaps() {
		// backoffAfter(n, 200ms, 400ms) is at least half of 200ms·2^(n-1).
		if low := 100 * time.Millisecond << i; gap < low {
			t.Errorf("attempt %d came %v after the one before; want at least %v (the backoff)", i+2, gap, low)
		}
	}
	if n := rec.count("ssh connect failed", map[string]string{"failures": "2"}); n != 1 {
		t.Errorf("second failure logged %d times; want 1", n)
	}
	echo(t, lns.addr(port), []byte("served"))
	if n := d.n.Load(); n != 3 {
		t.Errorf("login dials = %d after a client; want 3 (it shares the kept connection)", n)
	}
}
