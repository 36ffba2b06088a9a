package vk

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestDropManagedFields(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Finalizers: []string{"f"},
			Labels: map[string]string{"a": "b"}, ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "sluice-vk", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec:   corev1.PodSpec{NodeName: "n"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	want := pod.DeepCopy()
	want.ManagedFields = nil
	got, err := dropManagedFields(pod)
	if err != nil {
		t.Fatalf("dropManagedFields: %v", err)
	}
	if p, ok := got.(*corev1.Pod); !ok || p.ManagedFields != nil || p.Name != want.Name || p.UID != want.UID ||
		len(p.Finalizers) != 1 || p.Labels["a"] != "b" || p.ResourceVersion != "7" || p.Spec.NodeName != "n" || p.Status.Phase != corev1.PodRunning {
		t.Errorf("dropManagedFields = %+v; want the pod without its managed fields, the rest kept", got)
	}
	// a tombstone is passed on as it is
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: want}
	if got, err := dropManagedFields(tomb); err != nil || got != any(tomb) {
		t.Errorf("dropManagedFields(tombstone) = %v, %v; want it unchanged", got, err)
	}
}
