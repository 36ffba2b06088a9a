//go:build rig

package main

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestGatewayRequeueRig: a pod's job, a real Slurm job, is requeued
// (scontrol requeue) and starts again on the rig's node; the forward
// through the gateway carries to it again. Then the job's record moves to
// another node, as sluice-vk writes it when a requeued job starts
// elsewhere: the gateway, which learns it from the record and from no
// call of sluice-vk's, closes the shadow's connection at once; the shadow
// reconnects with the new node's grant and no longer reaches the old
// node; recorded back on the rig's node, it does again.
func TestGatewayRequeueRig(t *testing.T) {
	r := testrig.Load(t)
	job := sbatchSleep(t, r)
	waitJob(t, r, job, "RUNNING")
	port := portPair(t)
	startNodeEcho(t, r, port)
	g := startRigGateway(t, r, "gwrq", job, port)
	gw := g.proc
	fwd := startTunnel(t, modeForward, g.shadowArgs(t, g.token(t, gateway.Audience), port)...)
	waitFor(t, 10*time.Second, "the forward listening", func() bool { return fwd.count("forward listening", nil) == 1 })
	addr := net.JoinHostPort("127.0.0.2", strconv.Itoa(port))
	echo(t, addr, randomBytes(64<<10))

	// A requeue on the one node of the rig: Slurm holds the job back
	// (BeginTime), released here at once. Its placement is unchanged.
	slurmAs(t, r, "scontrol", "requeue", job)
	waitJob(t, r, job, "PENDING")
	slurmAs(t, r, "scontrol", "update", "jobid="+job, "starttime=now")
	waitJob(t, r, job, "RUNNING")
	g.setNode(t, g.node, job)
	echo(t, addr, randomBytes(64<<10))

	// Recorded on another node.
	connected := gw.count("shadow connected", nil)
	g.setNode(t, "node2", job)
	waitFor(t, 10*time.Second, "the gateway closing the shadow's connection", func() bool {
		return gw.count("closing the shadow's connection", map[string]string{"reason": `node "node2"`, "pod": "web"}) == 1
	})
	waitFor(t, 10*time.Second, "the shadow connecting again", func() bool {
		return gw.count("shadow connected", map[string]string{"node": "node2"}) > 0
	})
	refusedEcho(t, addr)
	// And back.
	g.setNode(t, g.node, job)
	waitFor(t, 10*time.Second, "the gateway closing the shadow's connection", func() bool {
		return gw.count("closing the shadow's connection", map[string]string{"reason": `to job "` + job + `" on node "` + g.node + `"`}) == 1
	})
	echo(t, addr, randomBytes(64<<10))
	if n := gw.count("shadow connected", nil) - connected; n < 2 {
		t.Errorf("%d connections of the shadow after two moves; want one per move", n)
	}
	fwd.stop()
	if errs := gw.linesAt("ERROR"); len(errs) > 0 {
		t.Errorf("the gateway logged errors: %v", errs)
	}
	gw.stopLogging("gateway stopped")
}

// slurmAs runs a Slurm command as the rig's user on the login node.
func slurmAs(t *testing.T, r *testrig.Rig, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", "sluice-login", "runuser", "-u", r.Get(t, "RIG_USER"), "--"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// sbatchSleep submits a job that sleeps, cancelled when the test ends.
func sbatchSleep(t *testing.T, r *testrig.Rig) string {
	t.Helper()
	job := slurmAs(t, r, "sbatch", "--parsable", "--job-name=sluice-gw-requeue", "--output=/dev/null", "--wrap=sleep 300")
	t.Cleanup(func() {
		exec.Command("ip", "netns", "exec", "sluice-login", "runuser", "-u", r.Get(t, "RIG_USER"), "--", "scancel", job).Run()
	})
	return job
}

// waitJob waits for job to be in state.
func waitJob(t *testing.T, r *testrig.Rig, job, state string) {
	t.Helper()
	waitFor(t, 60*time.Second, "job "+job+" "+state, func() bool {
		return slurmAs(t, r, "squeue", "-h", "-j", job, "-o", "%T") == state
	})
}
