//go:build rig

package shadow

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRigShadowNamespaceTrust, on the rig's API server: a <namespace>-shadow
// that someone made before the pod's first shadow, with sluice's labels
// forged, gets no copy of the site's key and no shadow, and Ensure says
// why; one sluice made is recorded (name and UID) in sluice's namespace
// and used again by a restarted sluice-vk.
func TestRigShadowNamespaceTrust(t *testing.T) {
	c := rigClient(t)
	ctx := context.Background()
	sfx, podNS, credNS := rigNamespaces(t, c, "shadow-trust")
	s := replicatingFrom(t, c, credNS)
	s.NodeName = "rig-trust-" + sfx

	premade := podNS + ShadowSuffix
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: premade,
		Labels: map[string]string{LabelManagedBy: ManagedBy, "pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", premade, err)
	}
	pod := testPod(podNS, "web", withUID("7a2b3c4d-5e6f-4a7b-8c9d-"+sfx+"000000"), withPorts("8080"))
	_, err := rigManager(t, c, s).Ensure(ctx, pod)
	if !errors.Is(err, ErrNamespaceNotTrusted) || !strings.Contains(err.Error(), "delete namespace "+premade) {
		t.Errorf("Ensure into %s, made by someone else = %v; want it refused, naming the namespace and the fix", premade, err)
	}
	secrets, err := c.CoreV1().Secrets(premade).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list secrets: %v", err)
	}
	for _, sec := range secrets.Items {
		t.Errorf("secret %s/%s in a namespace sluice did not make", premade, sec.Name)
	}
	deps, err := c.AppsV1().Deployments(premade).List(ctx, metav1.ListOptions{})
	if err != nil || len(deps.Items) != 0 {
		t.Errorf("deployments in %s: %d, %v; want none", premade, len(deps.Items), err)
	}

	// A namespace sluice makes: recorded, and used again after a restart.
	other := "shadow-trust2-" + sfx
	deleteNamespaceAtEnd(t, c, other+ShadowSuffix)
	pod2 := testPod(other, "web", withUID("8b3c4d5e-6f7a-4b8c-9d0e-"+sfx+"000000"), withPorts("8080"))
	ref, err := rigManager(t, c, s).Ensure(ctx, pod2)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, ref.Namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace: %v", err)
	}
	rec, err := c.CoreV1().ConfigMaps(credNS).Get(ctx, RecordName(ref.Namespace), metav1.GetOptions{})
	if err != nil || rec.Data["uid"] != string(ns.UID) {
		t.Fatalf("record of %s: %v, %v; want its uid %s", ref.Namespace, rec, err, ns.UID)
	}
	if _, err := rigManager(t, c, s).Ensure(ctx, pod2); err != nil {
		t.Errorf("Ensure after a restart: %v", err)
	}
	if _, err := c.CoreV1().Secrets(ref.Namespace).Get(ctx, "hpc-ssh-key", metav1.GetOptions{}); err != nil {
		t.Errorf("key copy in the namespace sluice made: %v", err)
	}
}
