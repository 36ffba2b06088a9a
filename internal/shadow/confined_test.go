package shadow

import (
	"context"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
)

// TestConfined checks that a Manager of a node confined to a tenant
// namespace sends nothing to the API server outside that namespace: no
// namespace creation, no list across namespaces, credentials read there.
func TestConfined(t *testing.T) {
	ctx := context.Background()
	s := testSpec()
	s.TenantNamespace = "hpc-tenant"
	s.ReplicateCredentials = true
	s.CredentialsNamespace = "hpc-tenant"
	c := newFake(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc-tenant", Name: "hpc-ssh-key"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc-tenant", Name: "hpc-known-hosts"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc-tenant", Name: "hpc-node-keys"}},
	)
	m, _ := newManager(t, c, s)
	pods := []*corev1.Pod{
		testPod("science", "web", withPorts("80")),
		testPod("physics", "worker", withUID("22222222-2222-2222-2222-222222222222"),
			withAnnotation(annotations.ReverseForwards, "redis:6379")),
	}
	for _, pod := range pods {
		ref, err := m.Ensure(ctx, pod)
		if err != nil {
			t.Fatalf("Ensure %s: %v", pod.Name, err)
		}
		if ref.Namespace != "hpc-tenant" {
			t.Errorf("shadow of %s/%s in %s; want hpc-tenant", pod.Namespace, pod.Name, ref.Namespace)
		}
		if err := m.SetNode(ctx, pod, "node1", "42", ""); err != nil {
			t.Errorf("SetNode: %v", err)
		}
		if _, err := m.PodIP(ctx, pod); err != nil {
			t.Errorf("PodIP: %v", err)
		}
		if _, err := m.ShadowPod(ctx, pod); err != nil {
			t.Errorf("ShadowPod: %v", err)
		}
	}
	if n, err := m.CleanOrphans(ctx, func(uid string) bool { return uid == testUID }); err != nil || n != 2 {
		t.Errorf("CleanOrphans = %d, %v; want the worker's deployment and configmap", n, err)
	}
	if err := m.Delete(ctx, pods[0]); err != nil {
		t.Errorf("Delete: %v", err)
	}

	if len(c.Actions()) == 0 {
		t.Fatal("no actions recorded")
	}
	for _, a := range c.Actions() {
		what := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetResource().Resource == "namespaces" {
			t.Errorf("a confined node did %s", what)
		}
		if a.GetNamespace() != "hpc-tenant" {
			t.Errorf("a confined node did %s in namespace %q", what, a.GetNamespace())
		}
		if l, ok := a.(k8stesting.ListAction); ok && l.GetNamespace() == metav1.NamespaceAll {
			t.Errorf("a confined node listed %s in every namespace", what)
		}
	}
}
