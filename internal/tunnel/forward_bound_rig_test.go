//go:build rig

package tunnel

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// Against the real OpenSSH on the node, which sends the job's bytes as far
// as the channel's window lets it: of two clients that never read what the
// job sends, the first is closed after the stall timeout and the second at
// once (MaxStalled 1), while a client that reads is served.
func TestForwardStalledClientsRig(t *testing.T) {
	r := testrig.Load(t)
	port := startNodeServer(t, r, "127.0.0.1", "-source")
	rec := newLogRecorder(t)
	lns := &loopbackListeners{}
	f := &Forward{
		Hop:          rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), &loginDialer{}),
		Ports:        []int{port},
		NodeFile:     nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
		Log:          slog.New(rec),
		PollInterval: 20 * time.Millisecond,
		Metrics:      NewMetrics(nil, "forward"),
		Status:       NewStatus("forward"),
		StallTimeout: 2 * time.Second,
		MaxStalled:   1,
	}
	startForward(t, f, lns)
	addr := lns.addr(port)
	waitFor(t, 10*time.Second, "tunnel up", func() bool { return f.Status.Snapshot().State == StateUp })

	start := time.Now()
	for range 2 {
		dialIdle(t, addr)
	}
	download(t, addr, 8<<20, 30*time.Second)
	waitFor(t, 30*time.Second, "both clients that never read closed", func() bool {
		return testutil.ToFloat64(f.Metrics.cut.WithLabelValues(CutStallLimit)) == 1 &&
			testutil.ToFloat64(f.Metrics.cut.WithLabelValues(CutStalled)) == 1
	})
	t.Logf("both closed %v after they came", time.Since(start))
	waitFor(t, 5*time.Second, "no connection left", func() bool { return testutil.ToFloat64(f.Metrics.active) == 0 })
	if got := testutil.ToFloat64(f.Metrics.stalled); got != 0 {
		t.Errorf("stalled = %v with no connection left; want 0", got)
	}
}
