package testrig

import (
	"context"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Kube is a client of the rig's API server as its administrator; a rig
// without a Kubernetes control plane skips (fails in CI) the test.
func (r *Rig) Kube(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(r.KubeConfig(t))
	if err != nil {
		t.Fatalf("testrig: kubernetes client: %v", err)
	}
	return c
}

// KubeConfig is the configuration of Kube's client, for a test that
// wraps its transport.
func (r *Rig) KubeConfig(t testing.TB) *rest.Config {
	t.Helper()
	file, ok := r.Lookup("RIG_KUBECONFIG")
	if !ok {
		Unavailable(t, "the rig has no Kubernetes control plane (RIG_KUBECONFIG missing from rig.env)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		t.Fatalf("testrig: kubeconfig %s: %v", file, err)
	}
	return rc
}

// MakeNamespace creates namespace ns on the rig's API server and deletes
// it when the test ends.
func MakeNamespace(t testing.TB, c kubernetes.Interface, ns string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	DeleteNamespaceAtEnd(t, c, ns)
}

// DeleteNamespaceAtEnd deletes namespace ns, if it exists, when the test
// ends.
func DeleteNamespaceAtEnd(t testing.TB, c kubernetes.Interface, ns string) {
	t.Cleanup(func() {
		err := c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
}

// PodToken asks the TokenRequest API for a token of pod's ServiceAccount,
// bound to pod, for audience, as the kubelet projects one into it.
func PodToken(t testing.TB, c kubernetes.Interface, pod *corev1.Pod, audience string) string {
	t.Helper()
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	seconds := int64(600)
	tr, err := c.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(context.Background(), sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{
			Audiences:         []string{audience},
			ExpirationSeconds: &seconds,
			BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return tr.Status.Token
}
