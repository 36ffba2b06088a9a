package provider

import (
	"context"
	"testing"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod whose <namespace>-shadow someone else made first waits, with the
// reason ShadowNamespaceNotTrusted and a Warning Event naming the
// namespace and the fix; nothing is copied there and no job is submitted.
// Once the namespace is gone, sluice makes its own and the pod goes on.
func TestShadowNamespaceNotTrustedWaits(t *testing.T) {
	ctx := context.Background()
	pod := testPod("web")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	h := newHarness(t, realShadows("", true), pod)
	for _, o := range []struct {
		ns, name string
		secret   bool
	}{{"sluice", "key", true}, {"sluice", "login-keys", false}, {"sluice", "node-keys", false}} {
		meta := metav1.ObjectMeta{Namespace: o.ns, Name: o.name}
		var err error
		if o.secret {
			_, err = h.client.CoreV1().Secrets(o.ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"ssh-privatekey": []byte("KEY")}}, metav1.CreateOptions{})
		} else {
			_, err = h.client.CoreV1().ConfigMaps(o.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	tenants := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-shadow", UID: "a-tenant's",
		Labels: map[string]string{shadow.LabelManagedBy: shadow.ManagedBy}}}
	if _, err := h.client.CoreV1().Namespaces().Create(ctx, tenants, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := h.p.CreatePod(ctx, pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Warning SubmitWaiting shadow: namespace ns-shadow not trusted")
	h.waitEvent("delete namespace ns-shadow so that sluice creates it, or add it to Network.TrustedShadowNamespaces")
	h.waitFor("the containers waiting with reason "+reasonShadowNamespaceNotTrusted, func() bool {
		got := h.last(pod)
		if got == nil || len(got.Status.ContainerStatuses) == 0 {
			return false
		}
		w := got.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reasonShadowNamespaceNotTrusted
	})
	if n, _, _, _ := h.jobs.counts(); n != 0 {
		t.Errorf("%d jobs submitted; want none while the shadow namespace is not trusted", n)
	}
	if _, err := h.client.CoreV1().Secrets("ns-shadow").Get(ctx, "key", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the site's key in ns-shadow: %v; want none", err)
	}

	if err := h.client.CoreV1().Namespaces().Delete(ctx, "ns-shadow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitEvent("submitted as Slurm job")
	if _, err := h.client.CoreV1().ConfigMaps("sluice").Get(ctx, shadow.RecordName("ns-shadow"), metav1.GetOptions{}); err != nil {
		t.Errorf("record of the namespace sluice made: %v", err)
	}
}
