//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// submitWorkers is the provider's default bound on submissions in flight.
const submitWorkers = 4

// TestWaitingPodsDoNotStarveTheNode makes more pods than there are
// submission slots wait for a ConfigMap that does not exist: another pod is
// still submitted and runs, and once the ConfigMap exists the waiting pods
// run too.
func TestWaitingPodsDoNotStarveTheNode(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var waiting []string
	for i := range submitWorkers + 1 {
		name := fmt.Sprintf("waits-%d", i)
		p := e.pod(name, `echo "got $FROM_CM"`)
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "FROM_CM", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "k"},
		}}}
		e.create(p)
		waiting = append(waiting, name)
	}
	// every slot is taken by a pod that waits (with the fault, for ever)
	e.waitFor(fmt.Sprintf("%d pods waiting for their ConfigMap", submitWorkers), 60*time.Second, func() bool {
		return len(e.waitingForConfig(waiting)) >= submitWorkers
	})

	free := e.create(e.pod("free", "echo free"))
	e.waitPod("free", "Succeeded while the others wait", 90*time.Second, phaseIs(corev1.PodSucceeded))
	if got := e.waitingForConfig(waiting); len(got) != len(waiting) {
		t.Fatalf("got pods %q waiting for their ConfigMap; want all of %q", got, waiting)
	}
	e.waitEvent(free, "Submitted: submitted as Slurm job")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: e.ns}, Data: map[string]string{"k": "here"}}
	if _, err := e.client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	// a waiting pod retries within a minute (the longest backoff)
	for _, name := range waiting {
		e.waitPod(name, "Succeeded once its ConfigMap exists", 150*time.Second, phaseIs(corev1.PodSucceeded))
		if got := e.logs(name, corev1.PodLogOptions{}); len(got) != 1 || got[0] != "got here" {
			t.Errorf("logs of %s: got %q; want [got here]", name, got)
		}
	}
}

// waitingForConfig are the pods of names that are Pending with their
// container waiting for its configuration (a ConfigMap).
func (e *env) waitingForConfig(names []string) []string {
	e.t.Helper()
	var out []string
	for _, name := range names {
		p, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodPending || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		if w := p.Status.ContainerStatuses[0].State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" {
			out = append(out, name)
		}
	}
	return out
}
