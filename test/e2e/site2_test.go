//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
)

// The second site's share of the tests that run serially on the first,
// because they restart or reconfigure its sshds or count its sessions and
// processes: what of them shares nothing runs here, in parallel, one pod
// doing the checks of several tests.

// tunnelsPod is a pod of e's that serves httpdScript's files on port, for
// its shadow's forward tunnel, and then runs probeScript through its
// reverse forwards; it returns the pod once it runs.
func (e *env) tunnelsPod(name string, port int) *corev1.Pod {
	e.t.Helper()
	pod := e.reversePod(name)
	c := &pod.Spec.Containers[0]
	c.Command = []string{"sh", "-c", httpdScript(port) + probeScript}
	c.Ports = []corev1.ContainerPort{{ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}
	created := e.create(pod)
	e.waitPod(name, "Running", 120*time.Second, phaseIs(corev1.PodRunning))
	return created
}

// reachesBoth waits until pod's job reaches Redis by its bare name and the
// Kubernetes API by FQDN with TLS verified, through the reverse tunnel;
// a tunnelsPod's files are written by then.
func (e *env) reachesBoth(name string) {
	e.t.Helper()
	e.waitTick(name, -1, "says +PONG", 120*time.Second)
	if log := strings.Join(e.logs(name, corev1.PodLogOptions{}), "\n"); !strings.Contains(log, "tls ok: CN=kube-apiserver 200 OK") {
		e.t.Errorf("%s: no verified TLS GET of the Kubernetes API in the log:\n%s", name, log)
	}
}

// servesThrough waits until addr, a shadow's or a port-forward's, answers
// with the job's /hello.
func (e *env) servesThrough(what, addr string) {
	e.t.Helper()
	var err error
	e.waitFor("the job's server through "+what, 120*time.Second, func() bool {
		var body string
		body, err = httpGet(addr, "/hello")
		return err == nil && strings.Contains(body, "served-by-the-job")
	})
}

// TestSrunCarrier, on the second site: with Reverse.NodeExec srun and no
// node host keys for sluice-vk, the reverse tunnel rides an srun step
// into the job, where a user-space sshd (the site's OpenSSH 10) takes its
// forwards, and serves Redis and the Kubernetes API; port-forward goes
// through srun too, one step of the job per stream: 16 requests at once,
// 64 MiB intact, no step left once forwarding stopped, a closed port
// ending the connection; the shadow's forward tunnel serves beside it. On the first site: TestReverseTunnelOverSrun
// (with ssh to the node refused), TestReverseTunnelUserspaceSshd (with the
// node's sshd refusing forwarding) and TestPortForwardOverSrun (with the
// node's relays and sshd sessions counted).
func TestSrunCarrier(t *testing.T) {
	parallel(t)
	onSite(t, secondSite, func(t *testing.T, on rigSite) {
		e := newTunnelEnv(t, tunnelOpts{rig: on.rig, reverse: "      NodeExec: srun\n"})
		port := httpdPort()
		pod := e.tunnelsPod("carried", port)
		job := e.jobID("carried")

		e.reachesBoth("carried")
		e.waitEvent(pod, "reverse tunnel up")
		sp := e.shadowPod(pod, e.ns+shadow.ShadowSuffix)
		b, err := e.client.CoreV1().Pods(sp.Namespace).GetLogs(sp.Name, &corev1.PodLogOptions{Container: shadow.ContainerReverse}).DoRaw(context.Background())
		if err != nil || !strings.Contains(string(b), "login node (srun)") {
			t.Errorf("ssh-reverse logs do not show the srun carrier (%v):\n%s", err, b)
		}

		e.servesThrough("the shadow", e.shadowAddr(pod, port))

		rc := e.restConfig()
		tunnelSteps := e.execSteps(job) // the reverse tunnel's own
		addr, end := e.forwardToServer(rc, "carried", port, true)
		getConcurrently(t, addr, 16)
		downloadIntact(t, addr)
		open := openTransfer(t, addr)
		if steps := stepsBesides(e.execSteps(job), tunnelSteps); len(steps) == 0 {
			t.Errorf("mid-transfer: job %s has no step but the reverse tunnel's %v; want the stream's srun step", job, tunnelSteps)
		}
		open.Close()
		end()
		e.waitFor("no step of the port-forward left", 20*time.Second, func() bool {
			return len(stepsBesides(e.execSteps(job), tunnelSteps)) == 0
		})
		closed, _ := e.portForward(rc, "carried", port+1, true)
		closedPortEnds(t, closed)
	})
}

// stepsBesides lists the steps of steps that are not in known.
func stepsBesides(steps, known []string) []string {
	var out []string
	for _, s := range steps {
		if !slices.Contains(known, s) {
			out = append(out, s)
		}
	}
	return out
}
