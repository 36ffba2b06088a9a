//go:build e2e

package e2e

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHelmExistingSecretConfined: the chart for a confined node with
// credentials.existingSecret, a Secret of the release's namespace only.
// The gateway mounts it there; the pod's forward and reverse tunnels work
// through the gateway, and no Secret is written in the tenant namespace
// (without the gateway sluice-vk would publish the key there: the chart's
// TestTenantRBAC and internal/shadow's tests cover that mode).
func TestHelmExistingSecretConfined(t *testing.T) {
	const name = "site-key"
	r := installChartWith(t, true, "credentials:\n  existingSecret: "+name+"\n", func(r *release) {
		key, err := os.ReadFile(r.e.rig.Get(t, "RIG_KEY"))
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns}, Data: map[string][]byte{"ssh-privatekey": key}}
		if _, err := r.e.client.CoreV1().Secrets(r.ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the existing Secret: %v", err)
		}
	})
	e := r.e
	ctx := context.Background()
	e.runTunnels(e.ns)
	secrets, err := e.client.CoreV1().Secrets(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Name == pullSecret {
			continue // the tenant's own, which the shadows pull with
		}
		t.Errorf("Secret %s/%s in the tenant namespace; want none but the pull Secret: the gateway holds the key", e.ns, s.Name)
	}
	if _, err := e.client.CoreV1().ConfigMaps(e.ns).Get(ctx, r.name+"-gateway-host-keys", metav1.GetOptions{}); err != nil {
		t.Errorf("the gateway's host keys in the tenant namespace: %v", err)
	}
	if lines := forbidden(r.log()); len(lines) > 0 {
		t.Errorf("with the chart's rights, sluice-vk was refused %d calls:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}
