package provider

import (
	"slices"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShadowFollowsPodReadiness: the pod's Ready is written onto its
// running shadow pod (the condition of its readiness gate) when it
// changes, once per change, and closed once its job has ended.
func TestShadowFollowsPodReadiness(t *testing.T) {
	h, shadows, pod, _ := runShadowed(t, "gated")
	gated := func() []bool {
		shadows.mu.Lock()
		defer shadows.mu.Unlock()
		return slices.Clone(shadows.gated)
	}
	shadows.mu.Lock()
	shadows.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-shadow", Name: "s-1", Labels: map[string]string{shadow.LabelPodUID: string(pod.UID)}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.7"},
	}
	shadows.mu.Unlock()
	h.waitFor("the shadow told the pod is Ready", func() bool { return slices.Equal(gated(), []bool{true}) })

	no := false
	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Ready: &no}}})
	h.waitFor("the shadow told the pod is not Ready", func() bool { return slices.Equal(gated(), []bool{true, false}) })
	time.Sleep(50 * time.Millisecond) // ten polls more
	if got := gated(); !slices.Equal(got, []bool{true, false}) {
		t.Errorf("writes %v; want one per change, [true false]", got)
	}

	// Ready again, then the job ends: the gate closes once, and stays
	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitFor("the shadow told the pod is Ready again", func() bool { return slices.Equal(gated(), []bool{true, false, true}) })
	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateCompleted, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true}}})
	h.waitPhase(pod, corev1.PodSucceeded)
	want := []bool{true, false, true, false}
	h.waitFor("the shadow told the pod's job ended", func() bool { return slices.Equal(gated(), want) })
	time.Sleep(50 * time.Millisecond)
	if got := gated(); !slices.Equal(got, want) {
		t.Errorf("writes %v; want %v", got, want)
	}
}
