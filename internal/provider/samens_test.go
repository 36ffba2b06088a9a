package provider

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
)

// realShadows sets the harness up with the real shadow manager, confined
// to tenant when it is not empty.
func realShadows(tenant string, replicate bool) func(*Config) {
	return func(c *Config) {
		c.TenantNamespace = tenant
		c.Shadows = &shadow.Manager{Client: c.Client, Spec: shadow.Spec{
			NodeName: "hpc", LoginHost: "login.example.org", LoginPort: 22, User: "alice",
			KeySecret: "key", LoginHostKeys: "login-keys", NodeHostKeys: "node-keys",
			ForwardTarget: "node", TunnelImage: "example.org/sluice-tunnel:v1",
			TenantNamespace: tenant, ReplicateCredentials: replicate, CredentialsNamespace: "sluice",
		}}
	}
}

func sameNSPod(name string) *corev1.Pod {
	pod := testPod(name)
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	pod.Annotations = map[string]string{annotations.ShadowSameNS: "true"}
	return pod
}

// interlink.eu/shadow-same-ns: "true" makes the shadow's Deployment,
// Service and node ConfigMap in the pod's own namespace; no
// <namespace>-shadow namespace is made, and no Warning Event names the
// annotation.
func TestShadowSameNamespace(t *testing.T) {
	pod := sameNSPod("web")
	h := newHarness(t, realShadows("", false), pod)
	ctx := context.Background()
	if err := h.p.CreatePod(ctx, pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	name := shadow.Name(pod)
	if _, err := h.client.AppsV1().Deployments(pod.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("the shadow Deployment is not in the pod's namespace %s: %v", pod.Namespace, err)
	}
	if _, err := h.client.CoreV1().Services(pod.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("the shadow Service is not in the pod's namespace: %v", err)
	}
	if _, err := h.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, shadow.NodeConfigMap(name), metav1.GetOptions{}); err != nil {
		t.Errorf("the node ConfigMap is not in the pod's namespace: %v", err)
	}
	if _, err := h.client.CoreV1().Namespaces().Get(ctx, pod.Namespace+shadow.ShadowSuffix, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s%s: got %v; want it never made", pod.Namespace, shadow.ShadowSuffix, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if strings.Contains(e, annotations.ShadowSameNS) {
			t.Errorf("unexpected event %q", e)
		}
	}
}

// On a node confined to a tenant namespace, a pod of that namespace gets
// its shadow there as it asks; a pod of another namespace asking for its
// own is refused with the reason, before any job is submitted. So is one
// whose shadow would need the site's credentials copied into its
// namespace, and a value that is neither true nor false.
func TestShadowSameNamespaceRefused(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tenant    string
		replicate bool
		value     string
		want      string
	}{
		{"tenant", "team-b", false, "true", "node hpc is confined to namespace team-b (Network.TenantNamespace)"},
		{"replicate", "", true, "true", "the site's SSH credentials copied into namespace ns"},
		{"value", "", false, "yes", `"yes": want true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := sameNSPod("web")
			pod.Annotations[annotations.ShadowSameNS] = tc.value
			h := newHarness(t, realShadows(tc.tenant, tc.replicate), pod)
			if err := h.p.CreatePod(context.Background(), pod); err != nil {
				t.Fatalf("CreatePod: %v", err)
			}
			got := h.waitPhase(pod, corev1.PodFailed)
			if got.Status.Reason != ReasonRefused || !strings.Contains(got.Status.Message, tc.want) ||
				!strings.Contains(got.Status.Message, annotations.ShadowSameNS) {
				t.Errorf("status %s %q; want %s saying %q", got.Status.Reason, got.Status.Message, ReasonRefused, tc.want)
			}
			if n, _, _, _ := h.jobs.counts(); n != 0 {
				t.Errorf("%d jobs submitted; want none", n)
			}
		})
	}
	// The tenant's own pod gets what it asks.
	pod := sameNSPod("web")
	pod.Namespace = "team-b"
	h := newHarness(t, realShadows("team-b", false), pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	if _, err := h.client.AppsV1().Deployments("team-b").Get(context.Background(), shadow.Name(pod), metav1.GetOptions{}); err != nil {
		t.Errorf("the shadow of the tenant's pod is not in team-b: %v", err)
	}
}
