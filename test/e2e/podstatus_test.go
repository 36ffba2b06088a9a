//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestInitContainerKeepsThePodPending: as a kubelet reports it, a pod is
// Pending while its init container runs (kubectl shows Init:0/1), Running
// once its container has started, and each container shows its own start
// time; kubectl wait --for=condition=Ready returns once it is.
func TestInitContainerKeepsThePodPending(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	pod := e.pod("init-wait", "echo main; sleep 600")
	pod.Spec.InitContainers = []corev1.Container{{Name: "wait", Image: e.image, Command: []string{"sh", "-c", "echo waiting; sleep 5"}}}
	e.create(pod)

	var runningEarly []string
	watch := func(p *corev1.Pod) {
		init := p.Status.InitContainerStatuses
		if p.Status.Phase == corev1.PodRunning && (len(init) == 0 || init[0].State.Terminated == nil) {
			runningEarly = append(runningEarly, p.ResourceVersion)
		}
	}
	during := e.waitPod("init-wait", "its init container running", 90*time.Second, func(p *corev1.Pod) bool {
		watch(p)
		init := p.Status.InitContainerStatuses
		return len(init) == 1 && init[0].State.Running != nil
	})
	if during.Status.Phase != corev1.PodPending {
		t.Errorf("while the init container runs: got phase %s; want Pending", during.Status.Phase)
	}
	out, code := e.kubectl("get", "pod", "init-wait", "--no-headers")
	if f := strings.Fields(out); code != 0 || len(f) < 3 || f[2] != "Init:0/1" {
		t.Errorf("kubectl get while the init container runs: got %q (exit %d); want status Init:0/1", out, code)
	}

	after := e.waitPod("init-wait", "Running", 60*time.Second, func(p *corev1.Pod) bool {
		watch(p)
		return p.Status.Phase == corev1.PodRunning
	})
	if len(runningEarly) > 0 {
		t.Errorf("the pod was Running before its init container ended (resource versions %v)", runningEarly)
	}
	init := after.Status.InitContainerStatuses[0].State.Terminated
	main := after.Status.ContainerStatuses[0].State.Running
	if init == nil || main == nil {
		t.Fatalf("once Running: got init %+v, main %+v; want init terminated and main running",
			after.Status.InitContainerStatuses[0].State, after.Status.ContainerStatuses[0].State)
	}
	ran := init.FinishedAt.Sub(init.StartedAt.Time)
	if ran < 4*time.Second || ran > 30*time.Second || main.StartedAt.Before(&init.FinishedAt) || main.StartedAt.Equal(&init.StartedAt) {
		t.Errorf("got init started %v, finished %v, main started %v; want the init container's own 5 s, then main",
			init.StartedAt, init.FinishedAt, main.StartedAt)
	}

	t.Logf("init container %v to %v, main since %v", init.StartedAt.Time, init.FinishedAt.Time, main.StartedAt.Time)
	if out, code := e.kubectl("wait", "--for=condition=Ready", "pod/init-wait", "--timeout=30s"); code != 0 {
		t.Errorf("kubectl wait --for=condition=Ready: exit %d: %s", code, out)
	}
	if out, code := e.kubectl("get", "pod", "init-wait", "--no-headers"); !strings.Contains(out, " 1/1 ") || !strings.Contains(out, " Running ") {
		t.Errorf("kubectl get once Ready: got %q (exit %d); want 1/1 Running", out, code)
	}
}
