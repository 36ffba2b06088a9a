package shadow

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every shadow pod waits for the offloaded pod's readiness: its template
// carries the gate.
func TestShadowPodHasTheReadinessGate(t *testing.T) {
	ctx := context.Background()
	c := newFake()
	m, _ := newManager(t, c, testSpec())
	pod := webPod()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	d, err := c.AppsV1().Deployments("science-shadow").Get(ctx, Name(pod), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.PodReadinessGate{{ConditionType: ConditionOffloadedReady}}
	if got := d.Spec.Template.Spec.ReadinessGates; !slices.Equal(got, want) {
		t.Errorf("readiness gates %v; want %v", got, want)
	}
}

func TestSetOffloadedReady(t *testing.T) {
	ctx := context.Background()
	pod := webPod()
	sp := shadowPodObject(pod, "science-shadow", "s-1", "10.244.0.7", corev1.PodRunning, 100, false)
	sp.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	c := newFake(sp)
	m, _ := newManager(t, c, testSpec())
	now := time.Unix(1000, 0)
	for _, ready := range []bool{true, false, true} {
		if err := m.SetOffloadedReady(ctx, sp, ready, now); err != nil {
			t.Fatalf("SetOffloadedReady(%t): %v", ready, err)
		}
		got, err := c.CoreV1().Pods("science-shadow").Get(ctx, "s-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := corev1.ConditionFalse
		if ready {
			want = corev1.ConditionTrue
		}
		if s := OffloadedReady(got); s != want {
			t.Errorf("after SetOffloadedReady(%t): %s = %q; want %q", ready, ConditionOffloadedReady, s, want)
		}
		kubelets := slices.IndexFunc(got.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
		if len(got.Status.Conditions) != 2 || kubelets < 0 {
			t.Errorf("conditions %+v; want the kubelet's Ready kept beside the gate's", got.Status.Conditions)
		}
	}
	gone := shadowPodObject(pod, "science-shadow", "gone", "", corev1.PodRunning, 100, false)
	if err := m.SetOffloadedReady(ctx, gone, true, now); err != nil {
		t.Errorf("SetOffloadedReady on a shadow pod gone: %v; want nil", err)
	}
	if s := OffloadedReady(gone); s != "" {
		t.Errorf("OffloadedReady of a pod without the condition = %q; want \"\"", s)
	}
}

// A confined manager writes no shadow pod outside its tenant namespace.
func TestSetOffloadedReadyConfined(t *testing.T) {
	s := testSpec()
	s.TenantNamespace = "hpc-tenant"
	c := newFake()
	m, _ := newManager(t, c, s)
	sp := shadowPodObject(webPod(), "elsewhere", "s-1", "10.244.0.7", corev1.PodRunning, 100, false)
	if err := m.SetOffloadedReady(context.Background(), sp, true, time.Unix(1000, 0)); err == nil {
		t.Error("SetOffloadedReady outside the tenant namespace: no error")
	}
	if len(c.Actions()) != 0 {
		t.Errorf("a confined manager reached the API: %v", c.Actions())
	}
}
