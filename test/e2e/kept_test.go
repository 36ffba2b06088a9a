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
// read with kubectl logs -c from the offloaded pod.
func TestKeptInitContainerRunsInTheShadowFirst(t *testing.T) {
	e := newTunnelEnv(t, tunnelOpts{network: "  TenantNamespace: $NAMESPACE\n  RefuseForeignPods: true\n"})
	pod := e.pod("kept", "echo job ran after setup")
	pod.Annotations = map[string]string{annotations.DisableOffloadInitContainers: "setup"}
	pod.Spec.InitContainers = []corev1.Container{{
		Name: "setup", Image: e.image,
		Command: []string{"sh", "-c", "echo kept-init-ran; sleep 3"},
	}}
	created := e.create(pod)
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
