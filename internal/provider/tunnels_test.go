package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// tunnelCond returns the TunnelReady condition of the pod last pushed.
func (h *harness) tunnelCond(pod *corev1.Pod) *corev1.PodCondition {
	got := h.last(pod)
	if got == nil {
		return nil
	}
	for _, c := range got.Status.Conditions {
		if c.Type == ConditionTunnelReady {
			return &c
		}
	}
	return nil
}

func (h *harness) waitTunnelCond(pod *corev1.Pod, status corev1.ConditionStatus, reason, msg string) {
	h.t.Helper()
	h.waitFor("condition TunnelReady "+string(status)+" "+reason, func() bool {
		c := h.tunnelCond(pod)
		return c != nil && c.Status == status && c.Reason == reason && strings.Contains(c.Message, msg)
	})
}

// runShadowed runs a pod exposing port 8080, with a fake shadow manager,
// until its job runs on node1; it returns the pushed pod.
// Edits, if any, apply to its Config after the fake's.
func runShadowed(t *testing.T, name string, edits ...func(*Config)) (*harness, *fakeShadows, *corev1.Pod, *corev1.Pod) {
	t.Helper()
	pod := testPod(name)
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	shadows := &fakeShadows{}
	h := newHarness(t, func(c *Config) {
		c.Shadows = shadows
		for _, edit := range edits {
			edit(c)
		}
	}, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job")
	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	return h, shadows, pod, h.waitPhase(pod, corev1.PodRunning)
}

func TestTunnelStateGivesEventsAndCondition(t *testing.T) {
	h, shadows, pod, _ := runShadowed(t, "tunneled")

	// The job runs, but the shadow has no pod yet.
	h.waitTunnelCond(pod, corev1.ConditionFalse, "ShadowPodMissing", "no pod")

	shadows.mu.Lock()
	shadows.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-shadow", Name: "s-abc",
		Labels: map[string]string{shadow.LabelPodUID: string(pod.UID)}}}
	shadows.mu.Unlock()
	fwd := func(state tunnel.State, node, err string, ups int) tunnel.Snapshot {
		return tunnel.Snapshot{Mode: "forward", State: state, Node: node, Error: err, Ups: ups}
	}
	h.waitTunnelCond(pod, corev1.ConditionFalse, "ShadowNotRunning", "not running")

	shadows.setTunnels(fwd(tunnel.StateConnecting, "node1", "", 0))
	h.waitTunnelCond(pod, corev1.ConditionFalse, "Connecting", "forward connecting")

	shadows.setTunnels(fwd(tunnel.StateUp, "node1", "", 1))
	h.waitEvent("Normal TunnelReady forward tunnel up: node node1 reached over SSH")
	h.waitTunnelCond(pod, corev1.ConditionTrue, "TunnelsUp", "forward up on node node1")

	shadows.setTunnels(fwd(tunnel.StateDown, "node1", "ssh connection to the compute node lost: EOF", 1))
	h.waitEvent("Warning TunnelLost forward tunnel down (node node1): ssh connection to the compute node lost: EOF; reconnecting")
	h.waitTunnelCond(pod, corev1.ConditionFalse, "TunnelDown", "forward down: ssh connection to the compute node lost: EOF")

	shadows.setTunnels(fwd(tunnel.StateUp, "node1", "", 2))
	h.waitEvent("Normal TunnelBack forward tunnel up again: node node1")
	h.waitTunnelCond(pod, corev1.ConditionTrue, "TunnelsUp", "")

	shadows.setTunnels(fwd(tunnel.StateHostKeyRejected, "node2", "host key mismatch for node2:22", 2))
	h.waitEvent("Warning TunnelHostKeyRejected forward tunnel refused a host key on the way to node node2 and sent nothing")
	h.waitTunnelCond(pod, corev1.ConditionFalse, "HostKeyRejected", "host key mismatch for node2:22")

	// The status the job gives the pod keeps the condition.
	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateCompleted, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true}}})
	h.waitPhase(pod, corev1.PodSucceeded)
	if c := h.tunnelCond(pod); c == nil || c.Reason != "HostKeyRejected" {
		t.Errorf("condition after the job ended: %+v; want the last one, HostKeyRejected", c)
	}

	// Each change was told once.
	h.mu.Lock()
	defer h.mu.Unlock()
	counts := map[string]int{}
	for _, e := range h.events {
		for _, r := range []string{EventTunnelReady, EventTunnelLost, EventTunnelBack, EventTunnelHostKey} {
			if strings.Contains(e, " "+r+" ") {
				counts[r]++
			}
		}
	}
	for _, r := range []string{EventTunnelReady, EventTunnelLost, EventTunnelBack, EventTunnelHostKey} {
		if counts[r] != 1 {
			t.Errorf("%d %s Events; want 1 (events %q)", counts[r], r, h.events)
		}
	}
}

// TestReplacedShadowPodGivesTunnelEvents: a tunnel whose shadow pod the
// Deployment replaced, or whose container the kubelet restarted, comes up
// as a new process counting from one again; the pod is told it was lost
// and is back, each time.
func TestReplacedShadowPodGivesTunnelEvents(t *testing.T) {
	h, shadows, pod, _ := runShadowed(t, "replaced")

	setPod := func(uid string, restarts int32) {
		shadows.mu.Lock()
		defer shadows.mu.Unlock()
		shadows.pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns-shadow", Name: "s-" + uid, UID: types.UID(uid),
				Labels: map[string]string{shadow.LabelPodUID: string(pod.UID)}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: shadow.ContainerForward, RestartCount: restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			}}},
		}
	}
	up := tunnel.Snapshot{Mode: "forward", State: tunnel.StateUp, Node: "node1", Ups: 1}
	setPod("a", 0)
	shadows.setTunnels(up)
	h.waitEvent("Normal TunnelReady forward tunnel up: node node1 reached over SSH")

	// the Deployment replaced the pod: its tunnel is up before a poll saw
	// it connecting
	setPod("b", 0)
	h.waitEvent("Warning TunnelLost forward tunnel lost: its container in shadow pod s-b was restarted or replaced")
	h.waitEvent("Normal TunnelBack forward tunnel up again: node node1")

	// the kubelet restarted the container in the same pod, and a poll saw
	// the new process connecting first
	shadows.setTunnels(tunnel.Snapshot{Mode: "forward", State: tunnel.StateConnecting, Node: "node1"})
	setPod("b", 1)
	h.waitTunnelCond(pod, corev1.ConditionFalse, "Connecting", "forward connecting")
	shadows.setTunnels(up)
	h.waitFor("a second TunnelBack", func() bool {
		h.drainEvents()
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, e := range h.events {
			if strings.Contains(e, " TunnelBack ") {
				n++
			}
		}
		return n == 2
	})
	h.waitTunnelCond(pod, corev1.ConditionTrue, "TunnelsUp", "forward up on node node1")

	h.mu.Lock()
	defer h.mu.Unlock()
	counts := map[string]int{}
	for _, e := range h.events {
		for _, r := range []string{EventTunnelReady, EventTunnelLost, EventTunnelBack} {
			if strings.Contains(e, " "+r+" ") {
				counts[r]++
			}
		}
	}
	if counts[EventTunnelReady] != 1 || counts[EventTunnelLost] != 2 || counts[EventTunnelBack] != 2 {
		t.Errorf("events %v; want 1 TunnelReady, 2 TunnelLost, 2 TunnelBack (events %q)", counts, h.events)
	}
}

// TestForwardRefusedGivesEvents: refusals the forward tunnel counts for
// the pod's author become a Warning naming how many since the last one and
// the last reason, at most once per refusalEvery, so that a squatter on
// the job's port cannot crowd the pod's other Events out; the same count
// again says nothing more.
func TestForwardRefusedGivesEvents(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)}
	h, shadows, pod, _ := runShadowed(t, "squatted", func(c *Config) { c.Now = clk.Now })
	shadows.mu.Lock()
	shadows.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-shadow", Name: "s-abc",
		Labels: map[string]string{shadow.LabelPodUID: string(pod.UID)}}}
	shadows.mu.Unlock()
	owned := "relay refused the forward: port 8080: listener 127.0.0.1:8080 owned by uid 1002, not the job's uid 1001"
	fwd := func(refused int, last string) tunnel.Snapshot {
		return tunnel.Snapshot{Mode: tunnel.ModeForward, State: tunnel.StateUp, Node: "node1", Ups: 1, Refused: refused, LastRefusal: last}
	}
	shadows.setTunnels(fwd(0, ""))
	h.waitEvent("Normal TunnelReady forward tunnel up")
	shadows.setTunnels(fwd(2, owned))
	h.waitEvent("Warning ForwardRefused 2 connection(s) to the job refused on the site since the last report; the last: " + owned)
	shadows.setTunnels(fwd(5, "port file: line 1: bad"))
	time.Sleep(100 * time.Millisecond) // twenty polls within the minute
	if n := h.eventsWith(EventForwardRefused); n != 1 {
		t.Errorf("%d %s Events within a minute; want 1", n, EventForwardRefused)
	}
	clk.set(clk.Now().Add(refusalEvery))
	h.waitEvent("Warning ForwardRefused 3 connection(s) to the job refused on the site since the last report; the last: port file: line 1: bad")
	time.Sleep(100 * time.Millisecond) // twenty more polls with the same count
	if n := h.eventsWith(EventForwardRefused); n != 2 {
		t.Errorf("%d %s Events; want 2", n, EventForwardRefused)
	}
}
