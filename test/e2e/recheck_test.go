//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSocksPatchedWhileWaitingIsRefused: the site's rules hold for the
// annotations a submission uses, not only for those the pod was created
// with. A pod waiting for a ConfigMap on a node without
// Reverse.AllowSocks is patched to ask for a SOCKS proxy: it is refused as
// at creation, with the rule in its status and a Warning Event, and no job
// is ever submitted, not even once the ConfigMap appears.
func TestSocksPatchedWhileWaitingIsRefused(t *testing.T) {
	parallel(t)
	e := newTunnelEnv(t)
	ctx := context.Background()
	pod := e.pod("patched", "echo $X")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "k"},
	}}}
	created := e.create(pod)
	e.waitPod("patched", "waiting for ConfigMap later", 60*time.Second, func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" {
				return true
			}
		}
		return false
	})

	patch := `{"metadata":{"annotations":{"` + annotations.ReverseSocksPort + `":"1080"}}}`
	if _, err := e.client.CoreV1().Pods(e.ns).Patch(ctx, "patched", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch pod: %v", err)
	}
	// The patch wakes the waiting submission, which checks it at once. (A
	// ConfigMap made at the same moment could let an attempt already past
	// its check submit what it checked, telling the patch as ignored.)
	got := e.waitPod("patched", "refused or submitted", 60*time.Second, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed || jobID(p) != ""
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Data: map[string]string{"k": "v"}}
	if _, err := e.client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if jobs := e.squeue(string(created.UID)); len(jobs) != 0 {
			t.Fatalf("got Slurm jobs %v once the ConfigMap appeared; want none", jobs)
		}
	}
	if jobs := e.squeue(string(created.UID)); len(jobs) != 0 {
		t.Fatalf("got Slurm jobs %v for a pod asking for SOCKS on a node without AllowSocks; want none", jobs)
	}
	field := "metadata.annotations[" + annotations.ReverseSocksPort + "]"
	if got.Status.Reason != string(annotations.ReasonSocksNotAllowed) || !strings.Contains(got.Status.Message, field) ||
		!strings.Contains(got.Status.Message, "AllowSocks") {
		t.Errorf("got phase %s reason %q message %q; want Failed, %s naming %s and AllowSocks",
			got.Status.Phase, got.Status.Reason, got.Status.Message, annotations.ReasonSocksNotAllowed, field)
	}
	e.waitEvent(got, string(annotations.ReasonSocksNotAllowed)+": refused: "+field)
}
