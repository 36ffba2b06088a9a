//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

// TestKeptInitContainerRunsInTheShadowFirst: on a node confined to the
// test's namespace, an init container the pod keeps out of the job runs in
// the shadow (in that namespace); the job starts after it, and its logs are
// read with kubectl logs -c from the offloaded pod; a kept sidecar shows
// its status in the shadow.
func TestKeptInitContainerRunsInTheShadowFirst(t *testing.T) {
	parallel(t)
	e := newTunnelEnv(t, tunnelOpts{network: "  TenantNamespace: $NAMESPACE\n  RefuseForeignPods: true\n"})
	pod := e.pod("kept", "sleep 8; echo job ran after setup")
	pod.Annotations = map[string]string{
		annotations.DisableOffloadInitContainers: "setup",
		annotations.DisableOffloadContainers:     "sidecar",
	}
	pod.Spec.InitContainers = []corev1.Container{{
		Name: "setup", Image: e.keptImage(),
		Command: []string{"sh", "-c", "echo kept-init-ran; sleep 3"},
	}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
		Name: "sidecar", Image: e.keptImage(),
		Command: []string{"sh", "-c", "echo sidecar-up; exec sleep 600"},
	})
	created := e.create(pod)
	// While the job runs, the kept sidecar shows the status it has in the
	// shadow, and its logs are the shadow's.
	e.waitPod("kept", "Running with the sidecar running", 120*time.Second, func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "sidecar" && cs.State.Running != nil {
				return p.Status.Phase == corev1.PodRunning
			}
		}
		return false
	})
	if b, err := e.client.CoreV1().Pods(e.ns).GetLogs("kept", &corev1.PodLogOptions{Container: "sidecar"}).DoRaw(context.Background()); err != nil || !strings.Contains(string(b), "sidecar-up") {
		t.Errorf("kubectl logs -c sidecar: %q, %v; want sidecar-up", b, err)
	}
	got := e.waitPod("kept", "Succeeded", 120*time.Second, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded
	})
	if cs := got.Status.InitContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 {
		t.Errorf("got init statuses %+v; want setup terminated with 0", cs)
	}
	b, err := e.client.CoreV1().Pods(e.ns).GetLogs("kept", &corev1.PodLogOptions{Container: "setup"}).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(b), "kept-init-ran") {
		t.Errorf("kubectl logs -c setup: %q, %v; want kept-init-ran", b, err)
	}
	main := e.logs("kept", corev1.PodLogOptions{Container: "main"})
	if len(main) == 0 || !strings.Contains(strings.Join(main, "\n"), "job ran after setup") {
		t.Errorf("got main logs %q; want the job's line", main)
	}
	e.waitEvent(created, "submitted as Slurm job")
	if sp := e.shadowPod(created, e.ns); sp.Namespace != e.ns {
		t.Errorf("shadow pod in %s; want the tenant namespace %s", sp.Namespace, e.ns)
	}
}

// keptImage is the image of kept containers: they run in the shadow on the
// rig's node, from the busybox image it imported (not from the site's
// image directory the job runs).
func (e *env) keptImage() string {
	return e.rig.Get(e.t, "RIG_K8S_BUSYBOX_IMAGE")
}
