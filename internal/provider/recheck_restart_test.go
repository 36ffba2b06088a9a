package provider

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAnnotationsStayFrozenAcrossRestart: a pod whose annotations were
// patched after its job was submitted, met again after the virtual kubelet
// restarted, keeps the annotations the job was submitted with, as its job
// directory recorded them: the adopted job's shadow, its reverse tunnel and
// its deletion follow them, and the change is told, not applied, even one
// the node would refuse.
func TestAnnotationsStayFrozenAcrossRestart(t *testing.T) {
	pod := testPod("restarted")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	submitted := map[string]string{annotations.ReverseForwards: "redis:6379"}
	// patched since: another forward, and a SOCKS proxy the node refuses
	pod.Annotations = map[string]string{annotations.ReverseForwards: "db:5432", annotations.ReverseSocksPort: "1080", "team": "b"}
	pod.Finalizers = []string{Finalizer}
	pod.Status.HostIP = "10.0.0.9"
	now := metav1.Now()
	pod.Status.StartTime = &now

	shadows := &fakeShadows{}
	h := newHarness(t, func(c *Config) {
		c.Shadows = shadows
		reverseSite(c)
	}, pod)
	// the job the process before the restart submitted
	h.jobs.jobs[string(pod.UID)] = "101"
	h.jobs.submitted = map[string]map[string]string{string(pod.UID): submitted}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Normal Adopted adopted Slurm job 101")
	h.waitEvent("Warning AnnotationChangeIgnored " + annotations.ReverseForwards + ", " + annotations.ReverseSocksPort + " changed after the pod was submitted as Slurm job 101")

	h.jobs.mu.Lock()
	job := h.jobs.lastJob
	h.jobs.mu.Unlock()
	if job.Reverse == nil || !slices.Equal(job.Reverse.Names, []string{"redis"}) {
		t.Errorf("the adopted job's reverse tunnel is %+v; want the one it was submitted with, to redis", job.Reverse)
	}
	got, err := h.p.GetPod(context.Background(), "ns", "restarted")
	if err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	if want := map[string]string{annotations.ReverseForwards: "redis:6379", "team": "b"}; !maps.Equal(got.Annotations, want) {
		t.Errorf("got annotations %v; want %v: those under interLink's prefixes as submitted, the others as they are", got.Annotations, want)
	}

	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitShadowNodes(shadows, 1)
	h.deleteAndForget(pod)
	shadows.mu.Lock()
	defer shadows.mu.Unlock()
	for _, sp := range append(shadows.nodeOf, shadows.deletedOf...) {
		if !maps.Equal(prefixed(sp.Annotations), submitted) {
			t.Errorf("the shadow was made, told or deleted through annotations %v; want those the job was submitted with, %v", prefixed(sp.Annotations), submitted)
		}
	}
}

// TestRefusedAfterRestartCancelsTheJob: a pod met again after a restart
// whose job no longer passes the node's rules (the operator turned SOCKS
// off meanwhile) is refused, and its job, which runs, is cancelled with
// it: a Failed pod leaves no job at the site, outside its quota and
// replaced by its controller.
func TestRefusedAfterRestartCancelsTheJob(t *testing.T) {
	pod := testPod("tightened")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	pod.Annotations = map[string]string{annotations.ReverseSocksPort: "1080"}
	pod.Finalizers = []string{Finalizer}
	pod.Status.HostIP = "10.0.0.9"
	now := metav1.Now()
	pod.Status.StartTime = &now
	h := newHarness(t, reverseSite, pod) // AllowSocks is off
	h.jobs.jobs[string(pod.UID)] = "101"
	h.jobs.submitted = map[string]map[string]string{string(pod.UID): maps.Clone(pod.Annotations)}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitPhase(pod, corev1.PodFailed)
	h.waitFor("the job cancelled", func() bool {
		_, _, cancels, _ := h.jobs.counts()
		return cancels == 1
	})
	h.waitEvent("Normal Cancelled cancelled the pod's Slurm job, submitted before sluice-vk restarted: the pod is refused")
}
