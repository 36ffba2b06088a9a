package shadow

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestServedIP(t *testing.T) {
	pod := webPod()
	for _, tc := range []struct {
		name string
		sp   *corev1.Pod
		want string
	}{
		{"none", nil, ""},
		{"running", shadowPodObject(pod, "ns", "a", "10.244.0.7", corev1.PodRunning, 100, false), "10.244.0.7"},
		{"pending", shadowPodObject(pod, "ns", "a", "", corev1.PodPending, 100, false), ""},
		{"pending with an IP", shadowPodObject(pod, "ns", "a", "10.244.0.7", corev1.PodPending, 100, false), ""},
		{"being deleted", shadowPodObject(pod, "ns", "a", "10.244.0.7", corev1.PodRunning, 100, true), ""},
		{"failed", shadowPodObject(pod, "ns", "a", "10.244.0.7", corev1.PodFailed, 100, false), ""},
	} {
		if got := ServedIP(tc.sp); got != tc.want {
			t.Errorf("%s: ServedIP = %q; want %q", tc.name, got, tc.want)
		}
	}
}
