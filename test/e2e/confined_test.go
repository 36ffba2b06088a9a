//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestConfinedNodeRefusesForeignPods: a node confined to another namespace
// with RefuseForeignPods fails a pod of the test's namespace with the
// reason and a Warning Event, and submits nothing.
func TestConfinedNodeRefusesForeignPods(t *testing.T) {
	parallel(t)
	e := newEnvWith(t, "  TenantNamespace: tenant-only\n  RefuseForeignPods: true\n", nil)
	created := e.create(e.pod("foreign", "echo should never run"))
	got := e.waitPod("foreign", "Failed", 60*time.Second, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed
	})
	if got.Status.Reason != "SluiceRefused" || !strings.Contains(got.Status.Message, "metadata.namespace") ||
		!strings.Contains(got.Status.Message, "Network.RefuseForeignPods") {
		t.Errorf("got reason %q message %q; want SluiceRefused naming metadata.namespace and Network.RefuseForeignPods", got.Status.Reason, got.Status.Message)
	}
	e.waitEvent(got, "refused: metadata.namespace")
	if jobs := e.squeue(string(created.UID)); len(jobs) != 0 {
		t.Errorf("got Slurm jobs %v for a refused pod; want none", jobs)
	}
}
