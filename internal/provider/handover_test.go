package provider

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// shadowWithForward is a shadow pod whose forward tunnel has args.
func shadowWithForward(args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-shadow", Name: "s-abc"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: shadow.ContainerForward, Args: args}}},
	}
}

// startAwait runs awaitTunnels for the pod's successor on node n1 with
// socket directory dir, and returns a channel closed when it returns.
func startAwait(h *harness, pod *corev1.Pod, dir string) <-chan struct{} {
	st := &podState{pod: pod, shadowOf: pod}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.p.awaitTunnels(context.Background(), st, "n1", dir)
	}()
	return done
}

// TestHandoverWaitsForTheTunnel: the old job is ended only once the
// forward tunnel says it is up on the successor's node and reads the
// successor's socket directory; a tunnel still on the old one, or down,
// keeps it waiting.
func TestHandoverWaitsForTheTunnel(t *testing.T) {
	shadows := &fakeShadows{pod: shadowWithForward("forward", "--entry-dir-file=/etc/sluice/node/socket-dir")}
	shadows.setTunnels(tunnel.Snapshot{Mode: tunnel.ModeForward, State: tunnel.StateUp, Node: "n1", EntryDir: "/sock/a-r0"})
	h := newHarness(t, func(c *Config) {
		c.Shadows, c.TunnelPoll, c.HandoverTimeout = shadows, time.Millisecond, time.Hour
	})
	done := startAwait(h, testPod("renewed"), "/sock/a-r1")
	for _, s := range []tunnel.Snapshot{
		{Mode: tunnel.ModeReverse, State: tunnel.StateUp, Node: "n1"},
		{Mode: tunnel.ModeForward, State: tunnel.StateDown, Node: "n1", EntryDir: "/sock/a-r1"},
		{Mode: tunnel.ModeForward, State: tunnel.StateUp, Node: "n0", EntryDir: "/sock/a-r1"},
	} {
		shadows.setTunnels(s)
		select {
		case <-done:
			t.Fatalf("handover went on with the tunnel at %+v", s)
		case <-time.After(50 * time.Millisecond):
		}
	}
	shadows.setTunnels(tunnel.Snapshot{Mode: tunnel.ModeForward, State: tunnel.StateUp, Node: "n1", EntryDir: "/sock/a-r1"})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("handover still waiting with the tunnel on the successor")
	}
	if n := h.eventsWith(EventTunnelLate); n != 0 {
		t.Errorf("%d %s Events; want none", n, EventTunnelLate)
	}
}

// TestHandoverTunnelLate: a tunnel that never moves holds the handover for
// HandoverTimeout, then a Warning says so and the old job is ended.
func TestHandoverTunnelLate(t *testing.T) {
	shadows := &fakeShadows{pod: shadowWithForward("forward")}
	shadows.setTunnels(tunnel.Snapshot{Mode: tunnel.ModeForward, State: tunnel.StateDown, Node: "n1", Error: "refused"})
	h := newHarness(t, func(c *Config) {
		c.Shadows, c.TunnelPoll, c.HandoverTimeout = shadows, time.Millisecond, 100*time.Millisecond
	})
	select {
	case <-startAwait(h, testPod("late"), "/sock/b-r1"):
	case <-time.After(10 * time.Second):
		t.Fatal("handover still waiting after its timeout")
	}
	if n := h.eventsWith(EventTunnelLate); n != 1 {
		t.Errorf("%d %s Events; want 1", n, EventTunnelLate)
	}
}

// TestHandoverWithoutEntry: a forward tunnel that dials the node's
// 127.0.0.1:PORT (no relay) has moved once it is up on the node, whatever
// directory it last read; a shadow with no forward tunnel has nothing to
// wait for.
func TestHandoverWithoutEntry(t *testing.T) {
	for _, sp := range []*corev1.Pod{shadowWithForward("forward", "--ports=8080"), {
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-shadow", Name: "s-abc"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: shadow.ContainerReverse}}},
	}} {
		shadows := &fakeShadows{pod: sp}
		shadows.setTunnels(tunnel.Snapshot{Mode: tunnel.ModeForward, State: tunnel.StateUp, Node: "n1"})
		h := newHarness(t, func(c *Config) {
			c.Shadows, c.TunnelPoll, c.HandoverTimeout = shadows, time.Millisecond, time.Hour
		})
		select {
		case <-startAwait(h, testPod("plain"), "/sock/c-r1"):
		case <-time.After(10 * time.Second):
			t.Fatalf("shadow with containers %v: handover still waiting", sp.Spec.Containers)
		}
	}
}
