//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShadowNamespaceMadeFirst: a user who may create namespaces makes
// <namespace>-shadow before the namespace's first offloaded pod, with
// sluice's labels. sluice-vk (as it runs in the chart: the credentials in
// its namespace, ReplicateCredentials) puts no copy of the site's key
// there, makes no shadow and submits no job: the pod waits with the
// reason ShadowNamespaceNotTrusted and a Warning Event naming the
// namespace and the fix.
func TestShadowNamespaceMadeFirst(t *testing.T) {
	parallel(t)
	network := fmt.Sprintf(`    KeySecret: %s
    LoginHostKeys: %s
    NodeHostKeys: %s
    ReplicateCredentials: true
  EnableTunnel: true
  ShadowMode: ssh
`, keySecret, loginHostKeys, nodeHostKeys)
	ctx := context.Background()
	var premade string
	e := newEnvWith(t, network, func(e *env) {
		e.vkArgs = []string{"--namespace", e.ns}
		premade = e.ns + shadow.ShadowSuffix
		objs := []func() error{
			func() error {
				_, err := e.client.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: keySecret},
					Data: map[string][]byte{"ssh-privatekey": []byte("the site's key")}}, metav1.CreateOptions{})
				return err
			},
			func() error {
				_, err := e.client.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: loginHostKeys}}, metav1.CreateOptions{})
				return err
			},
			func() error {
				_, err := e.client.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: nodeHostKeys}}, metav1.CreateOptions{})
				return err
			},
			func() error {
				_, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: premade,
					Labels: map[string]string{shadow.LabelManagedBy: shadow.ManagedBy}}}, metav1.CreateOptions{})
				return err
			},
		}
		for _, create := range objs {
			if err := create(); err != nil {
				t.Fatalf("setup: %v", err)
			}
		}
		t.Cleanup(func() {
			_ = e.client.CoreV1().Namespaces().Delete(context.Background(), premade, metav1.DeleteOptions{})
		})
	})

	pod := e.pod("web", "sleep 60")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	created := e.create(pod)
	e.waitPod("web", "waiting as ShadowNamespaceNotTrusted", 60*time.Second, func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason == "ShadowNamespaceNotTrusted" {
				return true
			}
		}
		return false
	})
	e.waitEvent(created, "namespace "+premade+" not trusted")
	e.waitEvent(created, "delete namespace "+premade+" so that sluice creates it, or add it to Network.TrustedShadowNamespaces")

	secrets, err := e.client.CoreV1().Secrets(premade).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list secrets: %v", err)
	}
	for _, s := range secrets.Items {
		t.Errorf("secret %s/%s in a namespace sluice did not make", premade, s.Name)
	}
	deps, err := e.client.AppsV1().Deployments(premade).List(ctx, metav1.ListOptions{})
	if err != nil || len(deps.Items) != 0 {
		t.Errorf("deployments in %s: %d, %v; want none", premade, len(deps.Items), err)
	}
	p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod: %v", err)
	}
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("pod phase %s; want Pending, its job not submitted", p.Status.Phase)
	}
}
