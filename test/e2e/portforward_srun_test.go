//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestPortForwardOverSrun: with Reverse.NodeExec srun and no pinned node
// host keys (the node hop is refused), port-forward goes through srun into
// the job, one step per stream running the relay: 16 requests at once
// (more than the carrier's slots: the streams that wait are read all the
// same, see readAhead), three times, 64 MiB intact, a closed port ends the
// connection, and once forwarding stopped no step or relay is left on the
// node, and no sshd session was opened there.
func TestPortForwardOverSrun(t *testing.T) {
	relay := buildBin(t, "./cmd/sluice-relay")
	e := newEnvWith(t, "    Reverse:\n      NodeExec: srun\n", func(e *env) {
		e.vkArgs = []string{"--relay-binary", relay}
	})
	e.waitNoNodeSessions()
	port := e.httpdPod("pfs")
	job := e.jobID("pfs")
	user := e.rig.Get(t, "RIG_USER")
	rc := e.restConfig()

	addr, end := e.forwardToServer(rc, "pfs", port, true)
	for range 3 {
		start := time.Now()
		getConcurrently(t, addr, 16)
		t.Logf("16 requests at once through srun in %v", time.Since(start).Round(time.Millisecond))
	}
	downloadIntact(t, addr)

	open := openTransfer(t, addr)
	steps := e.execSteps(job)
	relays := nodeProcs(t, "--connect 127.0.0.1:")
	pids, _ := sessionPids(nodeNetns, user)
	t.Logf("mid-transfer: steps %v, relays %v, node sshd sessions %v", steps, relays, pids)
	if len(steps) == 0 || len(relays) == 0 {
		t.Errorf("mid-transfer: steps %v, relays %v; want the stream's srun step running the relay", steps, relays)
	}
	if len(pids) > 0 {
		t.Errorf("node sshd sessions %v; want none: the streams go through srun", pids)
	}
	open.Close()
	end()
	e.waitFor("no step or relay of the port-forward on the node", 20*time.Second, func() bool {
		return len(e.execSteps(job)) == 0 && len(nodeProcs(t, "--connect 127.0.0.1:")) == 0
	})

	closed, _ := e.portForward(rc, "pfs", port+1, true)
	closedPortEnds(t, closed)
}
