//go:build rig

package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	jobrelay "github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestForwardEntryRig runs a job's relay on the compute node with its
// forward entry, and a forward that goes through it. bob, another user of
// the node, serves zeros on 127.0.0.1 on both of the pod's ports; the job
// listens on its own address on the first. The first port reaches the
// job's echo; the second is refused with the relay's reason, naming bob,
// and so is the relay's --connect (the srun carrier) to it.
func TestForwardEntryRig(t *testing.T) {
	r := testrig.Load(t)
	alice, bob := r.Get(t, "RIG_USER"), r.Get(t, "RIG_OTHER_USER")
	dir := rigSocketDir(t, r)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, testrig.UID(t, alice), -1); err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrFrom4([4]byte{127, byte(16 + rand.IntN(230)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
	relayBin := testrig.RelayBinary(t)
	startAsOnNode(t, alice, relayBin, "--addr", addr.String(), "--dir", dir, "--forward")
	waitFor(t, 10*time.Second, "relay ready", func() bool {
		_, err := os.Stat(filepath.Join(dir, jobrelay.ReadyFile))
		return err == nil
	})
	shared, only := freeNodePort(t), freeNodePort(t)
	startNodeServerAs(t, bob, net.JoinHostPort("127.0.0.1", strconv.Itoa(shared)), "-source")
	startNodeServerAs(t, alice, net.JoinHostPort(addr.String(), strconv.Itoa(shared)))
	startNodeServerAs(t, bob, net.JoinHostPort("127.0.0.1", strconv.Itoa(only)), "-source")

	entry := filepath.Join(t.TempDir(), "socket-dir")
	if err := os.WriteFile(entry, []byte(dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := newLogRecorder(t)
	lns := &loopbackListeners{}
	f := &Forward{
		Hop:          rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), &loginDialer{}),
		Ports:        []int{shared, only},
		NodeFile:     nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
		EntryDirFile: entry,
		Log:          slog.New(rec),
		PollInterval: 20 * time.Millisecond,
		Metrics:      NewMetrics(nil, "forward"),
		Status:       NewStatus("forward"),
	}
	startForward(t, f, lns)
	waitFor(t, 10*time.Second, "tunnel up", func() bool { return f.Status.Snapshot().State == StateUp })

	// bob's server would answer zeros: the echo proves it is the job's.
	echo(t, lns.addr(shared), []byte("to the job, not to bob\n"))

	c, err := net.Dial("tcp", lns.addr(only))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	got, _ := io.ReadAll(c)
	c.Close()
	if len(got) != 0 {
		t.Errorf("port %d, bob's only: got %d bytes (%.20q); want none", only, len(got), got)
	}
	want := fmt.Sprintf("listener 127.0.0.1:%d owned by uid %d, not the job's uid %d", only, testrig.UID(t, bob), testrig.UID(t, alice))
	waitFor(t, 5*time.Second, "the refusal logged", func() bool { return rec.logged("forward dial failed: connection refused", want) })
	if n := testutil.ToFloat64(f.Metrics.refused.WithLabelValues(RefusedDial)); n != 1 {
		t.Errorf("refused{reason=%q} = %v; want 1", RefusedDial, n)
	}

	// kubectl port-forward over the srun carrier runs the relay's
	// --connect as the job's user: bob's listener gets nothing of the
	// stream, and nothing of his comes back.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", nodeNetns, "setpriv", "--reuid", alice, "--regid", alice, "--init-groups",
		relayBin, "--connect", net.JoinHostPort("127.0.0.1", strconv.Itoa(only)))
	cmd.Stdin = strings.NewReader("the job's secret")
	var stderr strings.Builder
	var out byteCount // bob's server sends zeros until the connection ends
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	want = fmt.Sprintf("accepted by uid %d, not the job's uid %d", testrig.UID(t, bob), testrig.UID(t, alice))
	if !errors.As(err, &exit) || exit.ExitCode() != 4 || out != 0 || !strings.Contains(stderr.String(), want) {
		t.Errorf("--connect to bob's port %d: %v, %d bytes out, %q; want status 4, nothing out, saying %q", only, err, out, stderr.String(), want)
	}
}

// byteCount counts what is written to it.
type byteCount int64

func (n *byteCount) Write(p []byte) (int, error) {
	*n += byteCount(len(p))
	return len(p), nil
}

// logged reports whether a record with msg has an attribute containing sub.
func (h *logRecorder) logged(msg, sub string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range *h.recs {
		if l.msg != msg {
			continue
		}
		for _, v := range l.attrs {
			if strings.Contains(v, sub) {
				return true
			}
		}
	}
	return false
}
