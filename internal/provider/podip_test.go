package provider

import (
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodIPFollowsShadowPod: the pod has its shadow Service's address
// until the job runs and the shadow pod runs, then the shadow pod's (where
// Services selecting the pod reach the job), the new one's when the
// Deployment replaces it; a shadow pod not running leaves it as it is, and
// so does a pod with the shadow's labels in another namespace than the
// shadow's (anyone's, made to take the pod's address).
func TestPodIPFollowsShadowPod(t *testing.T) {
	h, shadows, pod, got := runShadowed(t, "served")
	if got.Status.PodIP != "10.96.0.42" {
		t.Errorf("pod IP %q with no shadow pod; want the shadow Service's 10.96.0.42", got.Status.PodIP)
	}

	ns := "ns-shadow"
	set := func(name, ip string, phase corev1.PodPhase, deleting bool) {
		sp := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{shadow.LabelPodUID: string(pod.UID)}},
			Status:     corev1.PodStatus{Phase: phase, PodIP: ip},
		}
		if deleting {
			now := metav1.Now()
			sp.DeletionTimestamp = &now
		}
		shadows.mu.Lock()
		shadows.pod = sp
		shadows.mu.Unlock()
	}
	waitIP := func(want string) {
		t.Helper()
		h.waitFor("pod IP "+want, func() bool {
			got := h.last(pod)
			return got != nil && got.Status.PodIP == want && len(got.Status.PodIPs) == 1 && got.Status.PodIPs[0].IP == want
		})
	}
	set("s-1", "", corev1.PodPending, false)
	time.Sleep(50 * time.Millisecond) // ten polls
	waitIP("10.96.0.42")
	set("s-1", "10.244.0.7", corev1.PodRunning, false)
	waitIP("10.244.0.7")
	set("s-1", "10.244.0.7", corev1.PodRunning, true)
	time.Sleep(50 * time.Millisecond)
	waitIP("10.244.0.7")
	set("s-2", "10.244.0.8", corev1.PodRunning, false)
	waitIP("10.244.0.8")
	ns = "evil"
	set("lookalike", "10.6.6.6", corev1.PodRunning, false)
	time.Sleep(50 * time.Millisecond)
	waitIP("10.244.0.8")
}
