//go:build e2e

package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHelmExistingSecretConfined: the chart for a confined node with
// credentials.existingSecret, a Secret of the release's namespace only.
// sluice-vk writes the shadows' key Secret in the tenant namespace from its
// mounted key, with the chart's rights (none outside the tenant namespace),
// the pod's forward and reverse tunnels work, and helm uninstall leaves no
// key in the tenant namespace.
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
	key, err := e.client.CoreV1().Secrets(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the key Secret in the tenant namespace: %v", err)
	}
	if key.Annotations[shadow.AnnotationCopyOf] == "" || len(key.OwnerReferences) != 1 || key.OwnerReferences[0].Name != r.name+"-login-hosts" {
		t.Errorf("key Secret %s/%s: annotations %v, owners %+v; want sluice-vk's copy owned by %s-login-hosts", e.ns, name, key.Annotations, key.OwnerReferences, r.name)
	}
	if lines := forbidden(r.log()); len(lines) > 0 {
		t.Errorf("with the chart's rights, sluice-vk was refused %d calls:\n%s", len(lines), strings.Join(lines, "\n"))
	}

	e.deletePods()
	if out, err := r.run("uninstall", r.name, "--namespace", r.ns, "--wait", "--timeout", "120s"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	r.uninstalled = true
	e.waitFor("the key Secret gone from the tenant namespace", 60*time.Second, func() bool {
		_, err := e.client.CoreV1().Secrets(e.ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
